"""Trident in columns: ``BaseArrowFunction``, ``BaseArrowFilter``, and the aggregations
that run over a record batch (``Count``, ``Sum``, ``min_by``, ``max_by``).

Each gives what its tuple-at-a-time twin gives, on the same fed batches; a columnar
word count persisted into a map state stays exact through a failed batch's replay.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from sparkstorm import Fields
from sparkstorm.trident import (
    BaseArrowFilter,
    BaseArrowFunction,
    BatchFailedTooOften,
    Count,
    FeederBatchSpout,
    LocalDRPC,
    MapGet,
    MemoryMapState,
    Sum,
    TridentCollector,
    TridentTopology,
)
from sparkstorm.trident.nodes import CombinerAggregator
from sparkstorm.trident.tuple import tuple_class
from tests.trident.ops import FailOnceOn, Split
from tests.trident.test_integration import drpc_rows


class ArrowSplit(BaseArrowFunction):
    """Each sentence's words, each extending its sentence's row."""

    def execute_batch(self, batch):
        lists = pc.split_pattern(batch.column(0), " ")
        words = pa.record_batch([pc.list_flatten(lists)], names=["word"])
        return words, pc.list_parent_indices(lists)


class ArrowLonger(BaseArrowFilter):
    """Keeps the words longer than 2 letters."""

    def keep(self, batch):
        return pc.greater(pc.utf8_length(batch.column(0)), 2)


class Scaled(BaseArrowFunction):
    """``n`` times 10, over the column."""

    def execute_batch(self, batch):
        n = batch.column(0).to_numpy()
        return pa.record_batch([pa.array(n * 10)], names=["n10"]), np.arange(len(n))


SENTENCES = [
    ["the cow jumped over the moon"],
    ["the man went to the store and bought some candy"],
    ["four score and seven years ago"],
    ["how many apples can you eat"],
]
FIRST, SECOND = SENTENCES[:2], SENTENCES[2:]


def fed(cluster, build, batches):
    """What the stream ``build(stream)`` declares emits, over ``batches``."""
    feeder = FeederBatchSpout(["sentence"])
    topology = TridentTopology()
    build(topology.new_stream("feeder", feeder)).name("out")
    cluster.submit_topology("columns", {}, topology.build(), capture=True)
    for batch in batches:
        feeder.feed(batch)
    cluster.wait_until_idle()
    return cluster.captured("columns", "out", "out")


def words_of(batches, longer_than=0):
    return [w for batch in batches for (s,) in batch for w in s.split() if len(w) > longer_than]


@pytest.mark.parametrize("engine", ["local", "continuous"])
def test_an_arrow_function_and_filter_give_what_their_tuple_twins_give(cluster_factory, engine):
    out = fed(
        cluster_factory(engine),
        lambda s: (
            s.each(Fields("sentence"), ArrowSplit(), Fields("word"))
            .each(Fields("word"), ArrowLonger())
            .project(Fields("word", "sentence"))
        ),
        [FIRST, SECOND],
    )
    expected = [
        [w, s] for batch in (FIRST, SECOND) for (s,) in batch for w in s.split() if len(w) > 2
    ]
    assert Counter(map(tuple, out)) == Counter(map(tuple, expected))


def test_count_sum_min_by_and_max_by_over_columns_equal_the_rows(cluster_factory):
    cluster = cluster_factory("local")
    columns = ArrowSplit()

    def counted(stream, split):
        return (
            stream.each(Fields("sentence"), split, Fields("word"))
            .group_by(Fields("word"))
            .aggregate(Count(), Fields("count"))
        )

    by_columns = fed(cluster, lambda s: counted(s, columns), [FIRST, SECOND])
    by_rows = fed(cluster_factory("local"), lambda s: counted(s, Split()), [FIRST, SECOND])
    assert Counter(map(tuple, by_columns)) == Counter(map(tuple, by_rows))
    assert Counter(map(tuple, by_columns)) == Counter(
        (w, n) for batch in (FIRST, SECOND) for w, n in Counter(words_of([batch])).items()
    )

    def lengths(stream):
        return stream.each(Fields("sentence"), ArrowSplit(), Fields("word")).each(
            Fields("word"), LengthOf(), Fields("n")
        )

    sums = fed(
        cluster_factory("local"),
        lambda s: lengths(s).aggregate(Fields("n"), Sum(), Fields("total")),
        [FIRST, SECOND],
    )
    assert sums == [[sum(len(w) for w in words_of([b]))] for b in (FIRST, SECOND)]
    shortest = fed(
        cluster_factory("local"), lambda s: lengths(s).min_by("n").project(Fields("word")), [FIRST]
    )
    longest = fed(
        cluster_factory("local"), lambda s: lengths(s).max_by("n").project(Fields("word")), [FIRST]
    )
    # one per batch partition (a FeederBatchSpout's stream is one partition); of equal
    # tuples the first is kept, as the tuple path keeps it
    words = words_of([FIRST])
    assert shortest == [[min(words, key=len)]]
    assert longest == [[max(words, key=len)]]


class LengthOf(BaseArrowFunction):
    def execute_batch(self, batch):
        lengths = pc.utf8_length(batch.column(0)).cast(pa.int64())
        return pa.record_batch([lengths], names=["n"]), np.arange(batch.num_rows)


def test_columns_aggregate_without_calling_the_aggregator_a_row(cluster_factory, monkeypatch):
    """On the local engine the aggregator's own methods are watched: over a record batch
    ``Count`` and ``Sum`` never run ``init`` (the tuple path calls it once a tuple)."""
    calls = Counter()
    for cls in (Count, Sum):
        original = cls.init

        def counting(self, tup, original=original, cls=cls):
            calls[cls.__name__] += 1
            return original(self, tup)

        monkeypatch.setattr(cls, "init", counting)
    fed(
        cluster_factory("local"),
        lambda s: (
            s.each(Fields("sentence"), ArrowSplit(), Fields("word"))
            .each(Fields("word"), LengthOf(), Fields("n"))
            .group_by(Fields("word"))
            .aggregate(Fields("n"), Sum(), Fields("total"))
        ),
        [FIRST],
    )
    assert calls == Counter()
    assert issubclass(Sum, CombinerAggregator)


@pytest.mark.parametrize("engine", ["local", "continuous"])
def test_a_columnar_word_count_stays_exact_through_a_replayed_batch(
    cluster_factory, engine, tmp_path
):
    """The split in columns, a batch failed once downstream of it (by a tuple-at-a-time
    function: the columns turn into rows there), counts persisted into a map state:
    each word counted once, as the tuple path counts it."""
    topology, drpc = TridentTopology(), LocalDRPC()
    feeder = FeederBatchSpout(["sentence"])
    counts = (
        topology.new_stream("feeder", feeder)
        .each(Fields("sentence"), ArrowSplit(), Fields("word"))
        .each(Fields("word"), FailOnceOn("store", str(tmp_path / "failed")), Fields("w"))
        .group_by(Fields("w"))
        .persistent_aggregate(MemoryMapState.Factory(), Count(), Fields("count"))
    )
    (
        topology.new_drpc_stream("count", drpc)
        .each(Fields("args"), ArrowSplit(), Fields("w"))
        .group_by(Fields("w"))
        .state_query(counts, Fields("w"), MapGet(), Fields("count"))
        .project(Fields("w", "count"))
    )
    cluster = cluster_factory(engine)
    cluster.submit_topology("exact", {}, topology.build())
    feeder.feed(FIRST)
    feeder.feed(SECOND)
    assert (tmp_path / "failed").exists()  # the batch with "store" was failed, and replayed
    every = Counter(words_of([FIRST, SECOND]))
    asked = "the store and moon apples"
    got = {w: n for w, n in drpc_rows(drpc, "count", asked)}
    assert got == {w: every[w] for w in asked.split()}


def test_an_arrow_function_works_a_tuple_at_a_time_where_it_must(cluster_factory):
    collector = TridentCollector()
    ArrowSplit().execute(tuple_class(Fields("sentence"))(["a b c"]), collector)
    assert collector.emitted == [["a"], ["b"], ["c"]]
    assert ArrowLonger().is_keep(tuple_class(Fields("word"))(["abc"])) is True
    assert ArrowLonger().is_keep(tuple_class(Fields("word"))(["ab"])) is False


class Lopsided(BaseArrowFunction):
    def execute_batch(self, batch):
        return pa.record_batch([pa.array([1, 2])], names=["x"]), [0]


def test_a_function_returning_the_wrong_shape_fails_its_batch_naming_itself(cluster_factory):
    cluster = cluster_factory("local")
    feeder = FeederBatchSpout(["sentence"])
    topology = TridentTopology()
    topology.new_stream("feeder", feeder).each(Fields("sentence"), Lopsided(), Fields("x"))
    cluster.submit_topology("bad", {"sparkstorm.trident.max.attempts": 1}, topology.build())
    with pytest.raises(BatchFailedTooOften, match="execute_batch returned 2 rows with parents"):
        feeder.feed(FIRST)
