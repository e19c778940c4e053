"""Storm's ``TridentIntegrationTest``, ported: word counts, DRPC, merges and repartitions."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from sparkstorm import Fields, InvalidTopologyError
from sparkstorm.trident import (
    Count,
    FeederBatchSpout,
    FeederCommitterBatchSpout,
    FilterNull,
    LocalDRPC,
    MapGet,
    MemoryMapState,
    Sum,
    TridentTopology,
    TupleCollectionGet,
)
from tests.trident.ops import CountAsAggregator, Split, StringLength, TrueFilter

ENGINES = ["local", "spark", "continuous"]
ON_SUPERSTEPS = {"test_word_count", "test_count_agg", "test_split_merge"}
"""The superstep mode runs the same bolts at ~6 supersteps a batch, so the suite runs
these three there (a feed, DRPC against a state, a batch-global aggregate, a merge); all
eight pass there too: ``python -m pytest tests/trident --superstep-all``."""


def pytest_generate_tests(metafunc):
    if "trident_engine" in metafunc.fixturenames:
        every = metafunc.config.getoption("--superstep-all")
        on_supersteps = every or metafunc.function.__name__ in ON_SUPERSTEPS
        metafunc.parametrize(
            "trident_engine", ENGINES if on_supersteps else ["local", "continuous"]
        )


@pytest.fixture
def cluster(trident_engine, cluster_factory):
    cluster = cluster_factory(trident_engine)
    cluster.engine_name = trident_engine
    return cluster


def drpc_rows(drpc: LocalDRPC, function: str, args: str) -> list[list[object]]:
    return json.loads(drpc.execute(function, args))


def multiset(rows: list[list[object]]) -> Counter[str]:
    return Counter(json.dumps(row) for row in rows)


def word_counts(topology: TridentTopology, spout):
    return (
        topology.new_stream("tester", spout)
        .each(Fields("sentence"), Split(), Fields("word"))
        .group_by(Fields("word"))
        .persistent_aggregate(MemoryMapState.Factory(), Count(), Fields("count"))
        .parallelism_hint(6)
    )


def sum_of_counts(topology: TridentTopology, drpc: LocalDRPC, counts) -> None:
    (
        topology.new_drpc_stream("words", drpc)
        .each(Fields("args"), Split(), Fields("word"))
        .group_by(Fields("word"))
        .state_query(counts, Fields("word"), MapGet(), Fields("count"))
        .each(Fields("count"), FilterNull())
        .aggregate(Fields("count"), Sum(), Fields("sum"))
        .project(Fields("sum"))
    )


def test_memory_map_get_tuples(cluster):
    topology, drpc = TridentTopology(), LocalDRPC()
    feeder = FeederBatchSpout(["sentence"])
    counts = word_counts(topology, feeder)
    (
        topology.new_drpc_stream("all-tuples", drpc)
        .broadcast()
        .state_query(counts, Fields("args"), TupleCollectionGet(), Fields("word", "count"))
        .project(Fields("word", "count"))
    )
    cluster.submit_topology("testing", {}, topology.build())
    feeder.feed([["hello the man said"], ["the"]])
    expected = [["hello", 1], ["said", 1], ["the", 2], ["man", 1]]
    assert multiset(drpc_rows(drpc, "all-tuples", "man")) == multiset(expected)
    feeder.feed([["the foo"]])
    expected = [["hello", 1], ["said", 1], ["the", 3], ["man", 1], ["foo", 1]]
    assert multiset(drpc_rows(drpc, "all-tuples", "man")) == multiset(expected)


def test_word_count(cluster):
    topology, drpc = TridentTopology(), LocalDRPC()
    feeder = FeederBatchSpout(["sentence"])
    sum_of_counts(topology, drpc, word_counts(topology, feeder))
    cluster.submit_topology("testing", {}, topology.build())
    feeder.feed([["hello the man said"], ["the"]])
    assert drpc_rows(drpc, "words", "the") == [[2]]
    assert drpc_rows(drpc, "words", "hello") == [[1]]
    feeder.feed([["the man on the moon"], ["where are you"]])
    assert drpc_rows(drpc, "words", "the") == [[4]]
    assert drpc_rows(drpc, "words", "man") == [[2]]
    assert drpc_rows(drpc, "words", "man where you the") == [[8]]


def test_word_count_committer_spout_with_empty_batches(cluster):
    topology, drpc = TridentTopology(), LocalDRPC()
    feeder = FeederCommitterBatchSpout(["sentence"])
    feeder.set_wait_to_emit(False)  # empty batches go on meanwhile
    sum_of_counts(topology, drpc, word_counts(topology, feeder))
    cluster.submit_topology("testing", {}, topology.build())
    feeder.feed([["hello the man said"], ["the"]])
    assert drpc_rows(drpc, "words", "the") == [[2]]
    assert drpc_rows(drpc, "words", "hello") == [[1]]
    cluster.advance_time(1)  # empty batches cycle through
    assert drpc_rows(drpc, "words", "the") == [[2]]
    feeder.feed([["the man on the moon"], ["where are you"]])
    assert drpc_rows(drpc, "words", "the") == [[4]]
    assert drpc_rows(drpc, "words", "man") == [[2]]
    assert drpc_rows(drpc, "words", "man where you the") == [[8]]
    feeder.feed([["the the"]])
    assert drpc_rows(drpc, "words", "the") == [[6]]
    feeder.feed([["the"]])
    assert drpc_rows(drpc, "words", "the") == [[7]]


def test_count_agg(cluster):
    topology, drpc = TridentTopology(), LocalDRPC()
    (
        topology.new_drpc_stream("numwords", drpc)
        .each(Fields("args"), Split(), Fields("word"))
        .aggregate(CountAsAggregator(), Fields("count"))
        .parallelism_hint(2)  # batch_global must pick one partition
        .project(Fields("count"))
    )
    cluster.submit_topology("testing", {}, topology.build())
    for _ in range(20 if cluster.engine_name == "local" else 3):  # a superstep is slow
        assert drpc_rows(drpc, "numwords", "the") == [[1]]
    assert drpc_rows(drpc, "numwords", "") == [[0]]
    assert drpc_rows(drpc, "numwords", "1 2 3 4 5 6 7 8") == [[8]]


def test_split_merge(cluster):
    topology, drpc = TridentTopology(), LocalDRPC()
    stream = topology.new_drpc_stream("splitter", drpc)
    words = stream.each(Fields("args"), Split(), Fields("word")).project(Fields("word"))
    lengths = stream.each(Fields("args"), StringLength(), Fields("len")).project(Fields("len"))
    topology.merge(words, lengths)
    cluster.submit_topology("testing", {}, topology.build())
    assert multiset(drpc_rows(drpc, "splitter", "the man")) == multiset([[7], ["the"], ["man"]])
    assert multiset(drpc_rows(drpc, "splitter", "hello")) == multiset([[5], ["hello"]])


def test_multiple_groupings_same_stream(cluster):
    topology, drpc = TridentTopology(), LocalDRPC()
    stream = topology.new_drpc_stream("tester", drpc).each(Fields("args"), TrueFilter())
    one = stream.group_by(Fields("args")).aggregate(CountAsAggregator(), Fields("count"))
    two = stream.group_by(Fields("args")).aggregate(CountAsAggregator(), Fields("count"))
    topology.merge(one, two)
    cluster.submit_topology("testing", {}, topology.build())
    assert multiset(drpc_rows(drpc, "tester", "the")) == multiset([["the", 1], ["the", 1]])
    assert multiset(drpc_rows(drpc, "tester", "aaaaa")) == multiset([["aaaaa", 1]] * 2)


def test_multi_repartition(cluster):
    topology, drpc = TridentTopology(), LocalDRPC()
    (
        topology.new_drpc_stream("tester", drpc)
        .each(Fields("args"), Split(), Fields("word"))
        .local_or_shuffle()
        .shuffle()
        .aggregate(CountAsAggregator(), Fields("count"))
    )
    cluster.submit_topology("testing", {}, topology.build())
    assert drpc_rows(drpc, "tester", "the man") == [[2]]
    assert drpc_rows(drpc, "tester", "aaa") == [[1]]


def test_stream_projection_validation():
    """A field an operation names that its input lacks is refused when it is declared."""
    topology = TridentTopology()
    feeder = FeederCommitterBatchSpout(["sentence"])
    counts = word_counts(topology, feeder)
    stream = topology.new_stream("tester2", feeder)
    words = stream.each(Fields("sentence"), Split(), Fields("word"))

    def refused(field: str):
        return pytest.raises(InvalidTopologyError, match=f"field '{field}' is not in its input")

    with refused("sentence1"):
        stream.each(Fields("sentence1"), Split(), Fields("word"))
    with refused("word1"):
        words.group_by(Fields("word1"))
    with refused("word1"):
        words.group_by(Fields("word")).aggregate(Fields("word1"), Count(), Fields("count"))
    with refused("sentence1"):
        stream.project(Fields("sentence1"))
    with refused("sentence1"):
        stream.partition_by(Fields("sentence1"))
    with refused("word1"):
        words.partition_aggregate(Fields("word1"), Count(), Fields("count"))
    with refused("non-existent"):
        words.group_by(Fields("word")).persistent_aggregate(
            MemoryMapState.Factory(), Fields("non-existent"), Count(), Fields("count")
        )
    with refused("word1"):
        (
            topology.new_drpc_stream("words", LocalDRPC())
            .each(Fields("args"), Split(), Fields("word"))
            .group_by(Fields("word"))
            .state_query(counts, Fields("word1"), MapGet(), Fields("count"))
        )
    with pytest.raises(InvalidTopologyError, match=r"whose fields are \['sentence', 'word'\]"):
        words.project(Fields("nope"))
