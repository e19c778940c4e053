"""Trident is exact: no batch lost or counted twice through replays, emit errors and restarts.

Each test is one defect found from outside, as a user meets it: an empty batch replayed
behind a failed one, a spout that fails to emit, a second ``LocalCluster``, a global
aggregate into a store, and the pairings of spouts and states that cannot be exact.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter, deque
from typing import ClassVar

import psycopg
import pytest
import redis

from sparkstorm import FailedException, Fields, InvalidTopologyError, Spout
from sparkstorm.connectors import redis_streams_trident
from sparkstorm.connectors.redis_streams_trident import (
    RedisStreamOpaqueTridentSpout,
    RedisStreamTridentSpout,
)
from sparkstorm.testing import FeederSpout
from sparkstorm.trident import (
    BaseFunction,
    Count,
    FeederBatchSpout,
    IBatchSpout,
    LocalDRPC,
    MemoryMapState,
    Sum,
    TridentTopology,
    TupleCollectionGet,
)
from sparkstorm.trident.state.postgres import PostgresMapState
from sparkstorm.trident.state.redis import RedisMapState
from tests.conftest import REDIS_URL
from tests.trident.ops import Split, SplitData
from tests.trident.test_map_states import DSN, stored_counts

pytestmark = pytest.mark.services


@pytest.fixture
def name():
    name = f"exact_{uuid.uuid4().hex[:8]}"
    yield name
    client = redis.Redis.from_url(REDIS_URL)
    client.delete(name, *client.keys(f"sparkstorm:trident:{name}*"), *client.keys(f"{name}:*"))
    with psycopg.connect(DSN, autocommit=True) as connection:
        connection.execute(f"DROP TABLE IF EXISTS sparkstorm_trident_{name}")
        found = connection.execute("SELECT to_regclass('sparkstorm_trident_progress')").fetchone()
        if found[0] is not None:
            connection.execute(
                "DELETE FROM sparkstorm_trident_progress WHERE name LIKE %s", (f"{name}%",)
            )


class AddThenFailOnce(BaseFunction):
    """The first time it meets ``word``, adds ``entry`` to a Redis stream and fails the batch.

    So a batch that was emitted empty right behind this one has something to read when
    the two are replayed.
    """

    def __init__(self, word: str, stream: str, entry: str, marker: str) -> None:
        self.word, self.stream, self.entry, self.marker = word, stream, entry, marker

    def execute(self, tup, collector):
        if tup[0] == self.word and not os.path.exists(self.marker):
            with open(self.marker, "w"):
                pass
            redis.Redis.from_url(REDIS_URL).xadd(self.stream, {"sentence": self.entry})
            msg = f"first sight of {self.word!r}"
            raise FailedException(msg)
        collector.emit([tup[0]])


@pytest.mark.parametrize("engine", ["local", "spark", "continuous"])
def test_an_empty_batch_replayed_behind_a_failed_one_writes_what_its_replay_read(
    engine, cluster_factory, name, tmp_path
):
    """Batch 1 holds the only entry, batch 2 goes out empty behind it, an entry lands,
    batch 1 fails once: batch 2's replay reads the entry, and it must be counted."""
    redis.Redis.from_url(REDIS_URL).xadd(name, {"sentence": "first alpha"})
    spout = RedisStreamOpaqueTridentSpout(REDIS_URL, name, max_batch_size=1)
    topology = TridentTopology()
    (
        topology.new_stream("stream", spout)
        .each(Fields("data"), SplitData(), Fields("token"))
        .each(
            Fields("token"),
            AddThenFailOnce("first", name, "second beta", str(tmp_path / "failed")),
            Fields("word"),
        )
        .group_by(Fields("word"))
        .persistent_aggregate(RedisMapState.opaque(REDIS_URL, name), Count(), Fields("count"))
    )
    cluster = cluster_factory(engine)
    cluster.submit_topology("empty-replay", {"topology.max.spout.pending": 2}, topology.build())
    cluster.wait_until_idle()
    assert (tmp_path / "failed").exists()  # the failure happened
    assert stored_counts(name, "opaque") == Counter(first=1, alpha=1, second=1, beta=1)


class FeedThenFailOnce(BaseFunction):
    """The first time it meets ``word``, hands ``then`` to a source and fails the batch."""

    def __init__(self, word: str, then) -> None:
        self.word, self.then, self.done = word, then, False

    def execute(self, tup, collector):
        if tup[0] == self.word and not self.done:
            self.done = True
            self.then()
            msg = f"first sight of {self.word!r}"
            raise FailedException(msg)
        collector.emit([tup[0]])


def _counted(topology: TridentTopology, stream, drpc: LocalDRPC) -> None:
    counts = stream.group_by(Fields("word")).persistent_aggregate(
        MemoryMapState.Factory(), Count(), Fields("count")
    )
    (
        topology.new_drpc_stream("all", drpc)
        .broadcast()
        .state_query(counts, Fields("args"), TupleCollectionGet(), Fields("word", "count"))
        .project(Fields("word", "count"))
    )


def _counts(drpc: LocalDRPC) -> dict[str, int]:
    return {word: n for word, n in json.loads(drpc.execute("all", ""))}


class QueueBatch:
    """Queues a batch on a feeder without waiting for its commit, as ``feed`` would."""

    def __init__(self, feeder: FeederBatchSpout, tuples: list[list[str]]) -> None:
        self.feed_id, self.tuples = feeder.feed_id, tuples

    def __call__(self) -> None:
        from sparkstorm.trident.spouts import _FEEDS  # the test's own process holds them

        feed = _FEEDS[self.feed_id]
        with feed.lock:
            feed.fed += 1
            feed.queue.append((feed.fed, self.tuples))


def test_an_empty_batch_of_a_feeder_replayed_behind_a_failed_one_is_committed(cluster_factory):
    feeder = FeederBatchSpout(["sentence"])
    topology, drpc = TridentTopology(), LocalDRPC()
    second = QueueBatch(feeder, [["second beta"]])
    stream = (
        topology.new_stream("feeder", feeder)
        .each(Fields("sentence"), Split(), Fields("token"))
        .each(Fields("token"), FeedThenFailOnce("first", second), Fields("word"))
    )
    _counted(topology, stream, drpc)
    cluster = cluster_factory("local")
    cluster.submit_topology("feeder-replay", {"topology.max.spout.pending": 2}, topology.build())
    feeder.feed([["first alpha"]])
    cluster.wait_until_idle()
    assert _counts(drpc) == {"first": 1, "alpha": 1, "second": 1, "beta": 1}


class QueueSpout(Spout):
    """A core spout over a queue in this process: a failed message goes back on it, as a
    broker's would; the acked ones are recorded."""

    QUEUES: ClassVar[dict[str, deque[tuple[str, str]]]] = {}
    ACKED: ClassVar[dict[str, list[str]]] = {}

    def __init__(self) -> None:
        self.key = uuid.uuid4().hex
        self.QUEUES[self.key], self.ACKED[self.key] = deque(), []
        self.out: dict[str, str] = {}

    def put(self, msg_id: str, sentence: str) -> None:
        self.QUEUES[self.key].append((msg_id, sentence))

    def open(self, conf, context, collector):
        self.collector = collector

    def next_tuple(self):
        if self.QUEUES[self.key]:
            msg_id, sentence = self.QUEUES[self.key].popleft()
            self.out[msg_id] = sentence
            self.collector.emit([sentence], msg_id)

    def ack(self, msg_id):
        del self.out[msg_id]
        self.ACKED[self.key].append(msg_id)

    def fail(self, msg_id, reason=None):
        self.QUEUES[self.key].appendleft((msg_id, self.out.pop(msg_id)))  # as a requeue

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("sentence"))


def test_an_empty_batch_of_a_core_spout_replayed_behind_a_failed_one_is_committed(
    cluster_factory,
):
    """A batch takes one message: batch 1's replay takes its own back, batch 2's the new one,
    which must be written before the spout is told it is done (acked)."""
    spout = QueueSpout()
    spout.put("m1", "first alpha")
    topology, drpc = TridentTopology(), LocalDRPC()
    stream = (
        topology.new_stream("core", spout)
        .each(Fields("sentence"), Split(), Fields("token"))
        .each(
            Fields("token"),
            FeedThenFailOnce("first", lambda: spout.put("m2", "second beta")),
            Fields("word"),
        )
    )
    _counted(topology, stream, drpc)
    cluster = cluster_factory("local")
    conf = {"topology.max.spout.pending": 2, "topology.spout.max.batch.size": 1}
    cluster.submit_topology("core-replay", conf, topology.build())
    cluster.wait_until_idle()
    assert _counts(drpc) == {"first": 1, "alpha": 1, "second": 1, "beta": 1}
    assert sorted(QueueSpout.ACKED[spout.key]) == ["m1", "m2"]


def test_a_spout_that_fails_to_emit_never_lets_two_batches_read_one_range(
    cluster_factory, name, monkeypatch
):
    """The batch after one whose emit failed waits for it: it would read the same range."""
    client = redis.Redis.from_url(REDIS_URL)
    sentences = [f"w{i % 13} w{i % 7} common" for i in range(200)]
    for sentence in sentences:
        client.xadd(name, {"sentence": sentence})
    calls = iter(range(1_000_000))
    read_after = redis_streams_trident._Emitter.read_after

    def flaky(self, partition, last):
        if next(calls) == 2:  # the third batch: the first two are in flight
            msg = "the stream's server is restarting"
            raise redis.ConnectionError(msg)
        return read_after(self, partition, last)

    monkeypatch.setattr(redis_streams_trident._Emitter, "read_after", flaky)
    topology = TridentTopology()
    (
        topology.new_stream("stream", RedisStreamTridentSpout(REDIS_URL, name, max_batch_size=20))
        .each(Fields("data"), SplitData(), Fields("word"))
        .group_by(Fields("word"))
        .persistent_aggregate(
            RedisMapState.transactional(REDIS_URL, name), Count(), Fields("count")
        )
    )
    cluster = cluster_factory("local", simulated_time=False)
    cluster.submit_topology("emit-error", {"topology.max.spout.pending": 3}, topology.build())
    cluster.wait_until_idle()
    assert any("could not emit it" in e.message for e in cluster.errors("emit-error"))
    expected = Counter(word for sentence in sentences for word in sentence.split())
    assert stored_counts(name, "transactional") == expected


class FirstAsked(IBatchSpout):
    """Records (in a file every process sees) the first txid it is asked for."""

    def __init__(self, record: str) -> None:
        self.record = record

    def emit_batch(self, batch_id, collector):
        if not os.path.exists(self.record):
            with open(self.record, "w") as out:
                out.write(str(batch_id))
        if batch_id <= 2:
            collector.emit([f"s{batch_id}"])

    def get_output_fields(self):
        return Fields("sentence")


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_new_local_cluster_starts_at_txid_1(engine, cluster_factory, tmp_path):
    """Storm's LocalCluster starts empty: a second one does not resume the first's txids."""
    for run in range(2):
        record = tmp_path / f"first-{run}"
        topology = TridentTopology()
        (
            topology.new_stream("spout", FirstAsked(str(record)))
            .group_by(Fields("sentence"))
            .persistent_aggregate(MemoryMapState.Factory(), Count(), Fields("count"))
        )
        cluster = cluster_factory(engine)
        cluster.submit_topology("same-name", {}, topology.build())
        cluster.wait_until_idle()
        cluster.shutdown()
        assert record.read_text() == "1", f"cluster {run + 1} began at batch {record.read_text()}"


@pytest.mark.parametrize("store", ["redis", "postgres"])
def test_a_global_persistent_aggregate_into_a_store_counts_every_batch(
    store, cluster_factory, name
):
    factory = (
        RedisMapState.opaque(REDIS_URL, name)
        if store == "redis"
        else PostgresMapState.transactional(DSN, name)
    )
    feeder = FeederBatchSpout(["sentence"])
    topology = TridentTopology()
    (
        topology.new_stream("feeder", feeder)
        .each(Fields("sentence"), Split(), Fields("word"))
        .persistent_aggregate(factory, Count(), Fields("count"))
    )
    cluster = cluster_factory("local")
    cluster.submit_topology("global", {}, topology.build())
    feeder.feed([["a b c"], ["d"]])
    feeder.feed([["e f"]])
    assert cluster.errors("global") == []
    assert {tuple(k): v for k, v in factory.committed_items()} == {
        (f"${store.upper()}-MAP-STATE-GLOBAL",): 6
    }


def _word_count(spout, factory, drpc: LocalDRPC | None = None) -> TridentTopology:
    topology = TridentTopology()
    (
        topology.new_stream("stream", spout)
        .each(Fields("data"), SplitData(), Fields("word"))
        .group_by(Fields("word"))
        .persistent_aggregate(factory, Count(), Fields("count"))
    )
    return topology


def test_a_core_spout_into_a_transactional_map_is_refused_naming_both(name):
    spout = FeederSpout(Fields("data"))
    topology = _word_count(spout, RedisMapState.transactional(REDIS_URL, name))
    with pytest.raises(InvalidTopologyError) as refused:
        topology.build()
    message = str(refused.value)
    assert "the non-transactional spout 'stream' feeds" in message
    assert "transactional map state (RedisMapState)" in message


def test_an_opaque_spout_and_a_transactional_map_not_connected_are_accepted(name):
    topology = TridentTopology()
    (
        topology.new_stream("opaque", RedisStreamOpaqueTridentSpout(REDIS_URL, name))
        .each(Fields("data"), SplitData(), Fields("word"))
        .group_by(Fields("word"))
        .persistent_aggregate(RedisMapState.opaque(REDIS_URL, name), Count(), Fields("count"))
    )
    (
        topology.new_stream("fed", FeederBatchSpout(["sentence"]))
        .each(Fields("sentence"), Split(), Fields("word"))
        .group_by(Fields("word"))
        .persistent_aggregate(
            RedisMapState.transactional(REDIS_URL, f"{name}_t"), Count(), Fields("count")
        )
    )
    topology.build()  # each path pairs its own spout and state


def test_a_drpc_stream_that_persists_is_refused():
    topology = TridentTopology()
    (
        topology.new_drpc_stream("words", LocalDRPC())
        .each(Fields("args"), Split(), Fields("word"))
        .group_by(Fields("word"))
        .persistent_aggregate(MemoryMapState.Factory(), Count(), Fields("count"))
    )
    with pytest.raises(InvalidTopologyError, match="persists a stream of DRPC function 'words'"):
        topology.build()


class Upper(BaseFunction):
    def execute(self, tup, collector):
        collector.emit([tup[0].upper()])


def test_each_takes_storms_form_of_a_function_and_its_output_fields(cluster_factory):
    """``each(function, out_fields)``: the function sees every field of the stream."""
    feeder = FeederBatchSpout(["word"])
    topology, drpc = TridentTopology(), LocalDRPC()
    upper = topology.new_stream("feeder", feeder).each(Upper(), Fields("upper"))
    assert upper.get_output_fields().to_list() == ["word", "upper"]
    counts = upper.group_by(Fields("upper")).persistent_aggregate(
        MemoryMapState.Factory(), Count(), Fields("count")
    )
    (
        topology.new_drpc_stream("all", drpc)
        .broadcast()
        .state_query(counts, Fields("args"), TupleCollectionGet(), Fields("w", "count"))
        .project(Fields("w", "count"))
        .aggregate(Fields("count"), Sum(), Fields("sum"))
    )
    cluster = cluster_factory("local")
    cluster.submit_topology("each-form", {}, topology.build())
    feeder.feed([["a"], ["b"], ["a"]])
    assert json.loads(drpc.execute("all", "")) == [[3]]


def test_a_state_that_cannot_say_where_it_lives_keeps_its_progress_with_the_driver(tmp_path):
    """Issue 55, defect 1: a StateFactory of the user's own, without store(), was refused
    unless topology.state.provider was named. Storm keeps the progress in ZooKeeper; here
    the driver keeps it on its disk. A LocalCluster keeps it in a folder of its own,
    gone with it, unless the test names a home (issue 66, defect 1): named here."""
    from sparkstorm.testing import LocalCluster
    from sparkstorm.trident.state import StateFactory

    class DictState(StateFactory):
        def make_state(self, conf, metrics, partition_index, num_partitions):
            return MemoryMapState(uuid.uuid4().hex)

    feeder = FeederBatchSpout(["sentence"])
    topology = TridentTopology()
    (
        topology.new_stream("feeder", feeder)
        .each(Fields("sentence"), Split(), Fields("word"))
        .group_by(Fields("word"))
        .persistent_aggregate(DictState(), Count(), Fields("count"))
    )
    with LocalCluster(home=tmp_path) as cluster:
        cluster.submit_topology("unsaid", {}, topology.build())
        feeder.feed([["a b"]])
        feeder.feed([["c"]])
    kept = json.loads((tmp_path / "trident" / "unsaid.json").read_text())
    assert kept["txid"] >= 2 and "sources" in kept


def test_memory_progress_beside_a_durable_state_is_refused(cluster_factory, name):
    topology = _word_count(
        RedisStreamTridentSpout(REDIS_URL, name), RedisMapState.transactional(REDIS_URL, name)
    )
    cluster = cluster_factory("local")
    conf = {"topology.state.provider": "memory"}
    with pytest.raises(InvalidTopologyError, match="a restart would count again"):
        cluster.submit_topology("forgetful", conf, topology.build())
