"""The rest of Storm's Trident API: chained aggregations, comparisons, custom partitions.

Each as the Trident API overview describes it, over a fed batch, its output captured
(a named operation that nothing follows is emitted on a stream of its name).
"""

from __future__ import annotations

from collections import Counter

import pytest

from sparkstorm import Fields, InvalidTopologyError
from sparkstorm.trident import (
    BaseAggregator,
    BaseFunction,
    BaseStateUpdater,
    BatchCoordinator,
    BatchFailedTooOften,
    Count,
    Emitter,
    FeederBatchSpout,
    FirstN,
    FixedBatchSpout,
    GroupedMultiReducer,
    ITridentSpout,
    JoinType,
    LRUMemoryMapState,
    MapGet,
    MemoryMapState,
    MultiReducer,
    StateSpec,
    Sum,
    TridentTopology,
)
from sparkstorm.trident.state import ReadOnlyMapState, StateFactory
from tests.trident.ops import CountAsAggregator, FailOnceOn


class _Double(BaseFunction):
    def execute(self, tup, collector):
        collector.emit([tup[0] * 2])


class _Letters(BaseAggregator):
    def init(self, batch_id, collector):
        return []

    def aggregate(self, state, tup, collector):
        state.append(tup[0])

    def complete(self, state, collector):
        if state:
            collector.emit(["".join(sorted(state))])


class _Identity(BaseFunction):
    def execute(self, tup, collector):
        collector.emit([tup[0]])


def run_fed(cluster_factory, build, batches, engine="local"):
    """Feed ``batches`` through the stream ``build(stream)`` declares; what it emitted."""
    feeder = FeederBatchSpout(["word", "n"])
    topology = TridentTopology()
    build(topology.new_stream("feeder", feeder)).name("out")
    cluster = cluster_factory(engine)
    cluster.submit_topology("api", {}, topology.build(), capture=True)
    for batch in batches:
        feeder.feed(batch)
    cluster.wait_until_idle()  # the workers' reports carry what they captured
    return cluster.captured("api", "out", "out")


BATCH = [["a", 3], ["b", 9], ["a", 1], ["c", 4], ["b", 2]]


def test_chained_partition_aggregates_give_one_tuple_per_partition(cluster_factory):
    out = run_fed(
        cluster_factory,
        lambda s: (
            s.chained_agg()
            .partition_aggregate(Count(), Fields("count"))
            .partition_aggregate(Fields("n"), Sum(), Fields("sum"))
            .chain_end()
        ),
        [BATCH],
    )
    assert out == [[5, 19]]


def test_chained_combiners_over_each_group(cluster_factory):
    out = run_fed(
        cluster_factory,
        lambda s: (
            s.group_by(Fields("word"))
            .chained_agg()
            .aggregate(Count(), Fields("count"))
            .aggregate(Fields("n"), Sum(), Fields("sum"))
            .chain_end()
        ),
        [BATCH],
    )
    assert sorted(out) == [["a", 2, 4], ["b", 2, 11], ["c", 1, 4]]


def test_chained_aggregators_emit_the_cross_product_of_their_tuples(cluster_factory):
    out = run_fed(
        cluster_factory,
        lambda s: (
            s.parallelism_hint(2)
            .chained_agg()
            .aggregate(Fields("n"), FirstN(2, "n"), Fields("top"))
            .aggregate(CountAsAggregator(), Fields("count"))
            .chain_end()
        ),
        [BATCH],
    )
    assert sorted(out) == [[4, 5], [9, 5]]


def test_a_chain_that_mixes_batch_and_partition_aggregations_is_refused():
    stream = TridentTopology().new_stream("feeder", FeederBatchSpout(["word", "n"]))
    chain = stream.chained_agg().aggregate(Count(), Fields("count"))
    with pytest.raises(InvalidTopologyError, match="a partition_aggregate after a aggregate"):
        chain.partition_aggregate(Count(), Fields("other"))


def test_min_by_and_max_by_keep_one_tuple_per_partition(cluster_factory):
    out = run_fed(cluster_factory, lambda s: s.min_by("n"), [BATCH])
    assert out == [["a", 1]]
    by_length = run_fed(
        cluster_factory,
        lambda s: s.max_by("word", lambda a, b: len(a) - len(b)),  # equal: the first stays
        [[["bb", 1], ["ccc", 2], ["ddd", 3]]],
    )
    assert by_length == [["ccc", 2]]


def test_min_and_max_compare_whole_tuples(cluster_factory):
    class ByNThenWord:  # a Java-style Comparator object
        def compare(self, a, b):
            return ((a[1], a[0]) < (b[1], b[0]) and -1) or ((a[1], a[0]) > (b[1], b[0]))

    assert run_fed(cluster_factory, lambda s: s.max(ByNThenWord()), [BATCH]) == [["b", 9]]
    assert run_fed(cluster_factory, lambda s: s.min(ByNThenWord()), [BATCH]) == [["a", 1]]


SPREAD = [["a", 3], ["b", 9], ["a", 1], ["g", 4], ["b", 2]]
"""a, b and g fall in three partitions of three."""


def test_min_by_runs_on_each_partition_as_storms_does(cluster_factory):
    out = run_fed(
        cluster_factory,
        lambda s: s.partition_by(Fields("word")).min_by("n").parallelism_hint(3),
        [SPREAD],
    )
    assert sorted(out) == [["a", 1], ["b", 2], ["g", 4]]  # a, b, g: a partition each


class ByFirstLetter:
    """A custom grouping: a word to the task its first letter's place gives."""

    def prepare(self, context, stream, targets):
        self.targets = targets

    def choose_tasks(self, task_id, values):
        return [self.targets[(ord(values[0][0]) - ord("a")) % len(self.targets)]]


def test_partition_deals_tuples_as_a_custom_grouping_chooses(cluster_factory):
    out = run_fed(
        cluster_factory,
        lambda s: (
            s.partition(ByFirstLetter())
            .partition_aggregate(Fields("word"), CountAsAggregator(), Fields("count"))
            .parallelism_hint(3)
        ),
        [BATCH],
    )
    assert sorted(out) == [[1], [2], [2]]  # a a | b b | c


def test_a_custom_grouping_that_chooses_no_task_of_the_bolt_fails_saying_so(cluster_factory):
    class Nowhere:
        def choose_tasks(self, task_id, values):
            return [999]

    feeder = FeederBatchSpout(["word", "n"])
    topology = TridentTopology()
    (
        topology.new_stream("feeder", feeder)
        .each(Fields("word"), _Identity(), Fields("w"))
        .partition(Nowhere())
        .partition_aggregate(Count(), Fields("count"))
    )
    cluster = cluster_factory("local")
    cluster.submit_topology("nowhere", {"sparkstorm.trident.max.attempts": 2}, topology.build())
    with pytest.raises(BatchFailedTooOften, match=r"chose tasks \[999\]; it may choose only"):
        feeder.feed(BATCH)


def test_identity_partition_keeps_each_partition_where_it_was(cluster_factory):
    out = run_fed(
        cluster_factory,
        lambda s: (
            s.partition_by(Fields("word"))
            .each(Fields("n"), _Double(), Fields("double"))
            .parallelism_hint(3)
            .identity_partition()
            .partition_aggregate(Fields("word"), _Letters(), Fields("letters"))
            .parallelism_hint(3)
        ),
        [SPREAD],
    )
    assert Counter(map(tuple, out)) == Counter({("aa",): 1, ("bb",): 1, ("g",): 1})


def test_identity_partition_between_different_parallelisms_is_refused():
    stream = TridentTopology().new_stream("feeder", FeederBatchSpout(["word", "n"]))
    (
        stream.partition_by(Fields("word"))
        .each(Fields("n"), _Double(), Fields("double"))
        .parallelism_hint(2)
        .identity_partition()
        .partition_aggregate(Count(), Fields("count"))
        .parallelism_hint(3)
    )
    with pytest.raises(InvalidTopologyError, match=r"\(2 partitions\) to .* \(3\)"):
        stream.topology.build()


# -- joins and multi-reduce: tuples of several streams of one batch -----------------
OUTER = JoinType.OUTER
PEOPLE = [["ann", 1], ["bob", 2], ["cat", 3]]
CITIES = [[1, "oslo"], [1, "rome"], [3, "kyiv"], [4, "lima"]]
AGES = [["ann", 30], ["dan", 40]]


def run_streams(cluster_factory, build, engine="local"):
    """Two or three fixed spouts, every tuple in batch 1; what ``build`` emits."""
    topology = TridentTopology()
    people = topology.new_stream("people", FixedBatchSpout(["name", "city"], 100, *PEOPLE))
    cities = topology.new_stream("cities", FixedBatchSpout(["id", "town"], 100, *CITIES))
    ages = topology.new_stream("ages", FixedBatchSpout(["who", "age"], 100, *AGES))
    build(topology, people, cities, ages).name("out")
    cluster = cluster_factory(engine)
    cluster.submit_topology("joined", {}, topology.build(), capture=True)
    cluster.wait_until_idle()
    return sorted(cluster.captured("joined", "out", "out"), key=repr)


@pytest.mark.parametrize("engine", ["local", "continuous"])
def test_an_inner_join_pairs_the_tuples_of_a_batch_with_equal_keys(cluster_factory, engine):
    out = run_streams(
        cluster_factory,
        lambda t, p, c, a: t.join(p, Fields("city"), c, Fields("id"), Fields("id", "name", "town")),
        engine,
    )
    assert out == [[1, "ann", "oslo"], [1, "ann", "rome"], [3, "cat", "kyiv"]]


def test_an_outer_join_gives_nulls_where_a_stream_has_no_tuple(cluster_factory):
    out = run_streams(
        cluster_factory,
        lambda t, p, c, a: t.join(
            p,
            Fields("city"),
            c,
            Fields("id"),
            Fields("id", "name", "town"),
            join_type=JoinType.OUTER,
        ),
    )
    assert out == sorted(
        [
            [1, "ann", "oslo"],
            [1, "ann", "rome"],
            [2, "bob", None],
            [3, "cat", "kyiv"],
            [4, None, "lima"],
        ],
        key=repr,
    )


def test_a_mixed_join_keeps_every_tuple_of_its_outer_stream(cluster_factory):
    out = run_streams(
        cluster_factory,
        lambda t, p, c, a: t.join(
            p,
            Fields("city"),
            c,
            Fields("id"),
            Fields("id", "name", "town"),
            join_type=[JoinType.INNER, JoinType.OUTER],  # cities may be missing: every person
        ),
    )
    assert out == sorted(
        [[1, "ann", "oslo"], [1, "ann", "rome"], [2, "bob", None], [3, "cat", "kyiv"]], key=repr
    )


def test_three_streams_join_on_one_key(cluster_factory):
    out = run_streams(
        cluster_factory,
        lambda t, p, c, a: t.join(
            [p, a, p.each(Fields("name"), _Identity(), Fields("again"))],
            [Fields("name"), Fields("who"), Fields("again")],
            Fields("name", "city", "age", "name2", "city2"),
            join_type=[JoinType.INNER, JoinType.OUTER, JoinType.INNER],
        ),
    )
    assert out == [["ann", 1, 30, "ann", 1], ["bob", 2, None, "bob", 2], ["cat", 3, None, "cat", 3]]


def test_a_join_whose_output_fields_do_not_add_up_is_refused():
    topology = TridentTopology()
    people = topology.new_stream("people", FixedBatchSpout(["name", "city"], 100, *PEOPLE))
    cities = topology.new_stream("cities", FixedBatchSpout(["id", "town"], 100, *CITIES))
    with pytest.raises(
        InvalidTopologyError, match="expected as many join fields on each side and 3"
    ):
        topology.join(people, Fields("city"), cities, Fields("id"), Fields("id", "name"))


class Tally(MultiReducer):
    """How many tuples each stream had in the partition."""

    def init(self, collector):
        return [0, 0]

    def execute(self, state, stream_index, tup, collector):
        state[stream_index] += 1

    def complete(self, state, collector):
        collector.emit(state)


class SumPerKey(GroupedMultiReducer):
    """Per key: the first stream's values summed, minus the second's."""

    def init(self, collector, group):
        return [0]

    def execute(self, state, stream_index, group, tup, collector):
        state[0] += tup[0] if stream_index == 0 else -tup[0]

    def complete(self, state, group, collector):
        collector.emit([group[0], state[0]])


def test_multi_reduce_sees_each_streams_tuples_of_the_partition(cluster_factory):
    out = run_streams(
        cluster_factory,
        lambda t, p, c, a: t.multi_reduce(p.global_(), c.global_(), Tally(), Fields("p", "c")),
    )
    assert out == [[3, 4]]


def test_a_grouped_multi_reduce_runs_once_a_group(cluster_factory):
    out = run_streams(
        cluster_factory,
        lambda t, p, c, a: t.multi_reduce(
            [Fields("city"), Fields("id")],
            [p.group_by(Fields("city")), c.group_by(Fields("id"))],
            SumPerKey(),
            Fields("key", "diff"),
        ).parallelism_hint(2),
    )
    assert out == [[1, -1], [2, 2], [3, 0], [4, -4]]  # 1 - 1 - 1 (two cities of id 1)


# -- ITridentSpout, StateSpec, ReadOnlyMapState, LRUMemoryMapState ---------------------
class Ranges(ITridentSpout):
    """Batches of three numbers; a batch's metadata is where it starts."""

    def __init__(self, total: int, log: str) -> None:
        self.total, self.log = total, log

    def get_coordinator(self, tx_state_id, conf, context):
        return RangeCoordinator(self.total, self.log)

    def get_emitter(self, tx_state_id, conf, context):
        return RangeEmitter(self.total)

    def get_output_fields(self):
        return Fields("n")


class RangeCoordinator(BatchCoordinator):
    def __init__(self, total, log):
        self.total, self.log = total, log

    def initialize_transaction(self, txid, prev_metadata, curr_metadata):
        start = 0 if prev_metadata is None else prev_metadata["end"]
        with open(self.log, "a") as out:  # every process sees what was initialized
            out.write(f"{txid}:{start}\n")
        return {"start": start, "end": min(start + 3, self.total)}

    def is_ready(self, txid):
        return True


class RangeEmitter(Emitter):
    def __init__(self, total):
        self.total = total

    def emit_batch(self, tx, coordinator_meta, collector):
        for n in range(coordinator_meta["start"], coordinator_meta["end"]):
            collector.emit([n])


def test_an_itridentspout_replays_a_batch_from_its_kept_metadata(cluster_factory, tmp_path):
    log = tmp_path / "initialized"
    topology = TridentTopology()
    (
        topology.new_stream("ranges", Ranges(12, str(log)))
        .each(Fields("n"), FailOnceOn(4, str(tmp_path / "failed")), Fields("m"))
        .global_()
        .persistent_aggregate(MemoryMapState.Factory(), Fields("m"), Sum(), Fields("sum"))
        .new_values_stream()
        .name("out")
    )
    cluster = cluster_factory("local")
    cluster.submit_topology("ranges", {}, topology.build(), capture=True)
    cluster.wait_until_idle()
    assert (tmp_path / "failed").exists()
    assert cluster.captured("ranges", "out", "out")[-1] == [sum(range(12))]
    starts = [line.split(":") for line in log.read_text().split()]
    assert [int(s) for _, s in starts[:4]] == [0, 3, 6, 9]  # batch 2 was not initialized twice
    assert len({t for t, _ in starts}) == len(starts)


def test_a_state_spec_sets_how_many_partitions_the_state_has():
    topology = TridentTopology()
    spec = StateSpec(MemoryMapState.Factory(), required_num_partitions=3)
    (
        topology.new_stream("feeder", FeederBatchSpout(["word", "n"]))
        .group_by(Fields("word"))
        .persistent_aggregate(spec, Count(), Fields("count"))
    )
    built = topology.build()
    (persist,) = [b for b in built.bolts if "persist" in b.component_id]
    assert persist.num_tasks == 3


class Lookup(StateFactory):
    """A static lookup table: a read-only map."""

    def make_state(self, conf, metrics, partition_index, num_partitions):
        return Table()


class Table(ReadOnlyMapState):
    def multi_get(self, keys):
        return [{"a": "apple", "b": "banana"}.get(key[0]) for key in keys]


def test_map_get_reads_a_read_only_static_state(cluster_factory):
    out = run_fed(
        cluster_factory,
        lambda s: s.state_query(
            s.topology.new_static_state(Lookup()), Fields("word"), MapGet(), Fields("fruit")
        ).project(Fields("word", "fruit")),
        [[["a", 1], ["c", 2], ["b", 3]]],
    )
    assert sorted(out, key=repr) == [["a", "apple"], ["b", "banana"], ["c", None]]


def test_an_lru_memory_map_state_keeps_the_most_recently_used_keys():
    state = LRUMemoryMapState.Factory(2).make_state({}, None, 0, 1)
    state.begin_commit(1)
    state.multi_put([["a"], ["b"]], [1, 2])
    state.commit(1)
    state.begin_commit(2)
    assert state.multi_get([["a"]]) == [1]  # a is now the most recently used
    state.multi_put([["c"]], [3])  # b goes
    state.commit(2)
    assert state.multi_get([["a"], ["b"], ["c"]]) == [1, None, 3]


class Recorder(BaseStateUpdater):
    """Writes nothing: says what it was given."""

    def update_state(self, state, tuples, collector):
        for tup in tuples:
            collector.emit([len(tup)])


def test_partition_persist_without_input_fields_gives_the_updater_every_field(cluster_factory):
    out = run_fed(
        cluster_factory,
        lambda s: s.partition_persist(
            MemoryMapState.Factory(), Recorder(), Fields("width")
        ).new_values_stream(),
        [[["a", 1]]],
    )
    assert out == [[2]]
