"""A transactional spout over a Redis stream: exact counts through failures and a restart.

A Redis stream feeds a Trident word count into a transactional Redis map whose every
fifth write fails after writing, with three batches in flight. Then the topology is
killed, more entries are added, and it is submitted again: it goes on from the ranges
kept in the checkpoint store with the last committed txid (reading the stream from the
start again would count the first entries twice).
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections import Counter

import pytest
import redis

from sparkstorm import Fields, InvalidTopologyError
from sparkstorm.connectors.redis_streams_trident import (
    RedisStreamArrowTridentSpout,
    RedisStreamOpaqueTridentSpout,
    RedisStreamTridentSpout,
)
from sparkstorm.trident import Count, TridentTopology
from sparkstorm.trident.progress import Progress
from sparkstorm.trident.state.redis import RedisMapState
from tests.conftest import REDIS_URL
from tests.trident.ops import FlakyMap, SplitData
from tests.trident.test_columns import ArrowSplit
from tests.trident.test_map_states import stored_counts

pytestmark = pytest.mark.services


@pytest.fixture
def names():
    name = f"test_{uuid.uuid4().hex[:8]}"
    yield name
    client = redis.Redis.from_url(REDIS_URL)
    client.delete(name, f"sparkstorm:trident:{name}", *client.keys(f"{name}:*"))


def word_count(name: str, spout, factory, columns: bool = False) -> TridentTopology:
    """The count; ``columns``: a columnar spout, its sentences split with pyarrow."""
    topology = TridentTopology()
    stream = topology.new_stream("stream", spout)
    if columns:
        words = stream.each(Fields("sentence"), ArrowSplit(), Fields("word"))
    else:
        words = stream.each(Fields("data"), SplitData(), Fields("word"))
    (
        words.parallelism_hint(2)
        .group_by(Fields("word"))
        .persistent_aggregate(factory, Count(), Fields("count"))
        .parallelism_hint(2)
    )
    return topology


@pytest.mark.parametrize(
    ("engine", "columns"), [("local", False), ("continuous", False), ("continuous", True)]
)
def test_a_stream_counted_exactly_once_through_failures_and_a_restart(
    engine, columns, cluster_factory, names
):
    client = redis.Redis.from_url(REDIS_URL)
    sentences = [f"w{i % 13} w{i % 7} common" for i in range(600)]
    conf = {
        "topology.max.spout.pending": 3,
        "topology.state.provider": "redis",
        "topology.state.provider.config": {"url": REDIS_URL, "key_prefix": names},
    }
    cluster = cluster_factory(engine)
    for part in (sentences[:400], sentences[400:]):
        for sentence in part:
            client.xadd(names, {"sentence": sentence})
        if columns:
            spout = RedisStreamArrowTridentSpout(REDIS_URL, names, ["sentence"], max_batch_size=50)
        else:
            spout = RedisStreamTridentSpout(REDIS_URL, names, max_batch_size=50)
        factory = FlakyMap(RedisMapState.transactional(REDIS_URL, names))
        topology = word_count(names, spout, factory, columns)
        cluster.submit_topology("stream-counts", conf, topology.build())
        cluster.wait_until_idle()
        cluster.kill_topology("stream-counts")
    expected = Counter(w for s in sentences for w in s.split())
    assert stored_counts(names, "transactional") == expected


def test_an_opaque_spout_into_a_transactional_map_is_refused(names):
    spout = RedisStreamOpaqueTridentSpout(REDIS_URL, names)
    topology = word_count(names, spout, RedisMapState.transactional(REDIS_URL, names))
    with pytest.raises(InvalidTopologyError, match="the opaque spout 'stream' feeds"):
        topology.build()


def test_a_checkpoint_store_that_fails_holds_the_batches_back_and_loses_nothing(
    cluster_factory, names, monkeypatch
):
    """The ranges of a batch are stored before it leaves: while the store fails, it waits."""
    client = redis.Redis.from_url(REDIS_URL)
    sentences = [f"w{i % 13} w{i % 7} common" for i in range(400)]
    for sentence in sentences:
        client.xadd(names, {"sentence": sentence})
    keeps, commits, last = itertools.count(), itertools.count(), [0]
    kept = Progress.commit

    def flaky(self, txid, spouts=None, resume_at=None):
        # a batch's ranges are kept under the last committed txid, a commit under its own
        count = next(keeps) if txid == last[0] else next(commits)
        if (txid == last[0] and count in (3, 4)) or (txid != last[0] and count == 2):
            msg = "the store is restarting"  # ranges twice in a row, a commit once
            raise redis.ConnectionError(msg)
        kept(self, txid, spouts, resume_at)
        last[0] = txid

    monkeypatch.setattr(Progress, "commit", flaky)
    conf = {
        "topology.max.spout.pending": 3,
        "topology.state.provider": "redis",
        "topology.state.provider.config": {"url": REDIS_URL, "key_prefix": names},
    }
    cluster = cluster_factory("local")
    spout = RedisStreamTridentSpout(REDIS_URL, names, max_batch_size=50)
    factory = RedisMapState.transactional(REDIS_URL, names)
    cluster.submit_topology("stored", conf, word_count(names, spout, factory).build())
    expected = Counter(w for s in sentences for w in s.split())
    deadline = time.monotonic() + 30
    while stored_counts(names, "transactional") != expected:  # a held batch is no tuple in
        assert time.monotonic() < deadline, stored_counts(names, "transactional")  # flight
        cluster.wait_until_idle()
    said = [e.message for e in cluster.errors("stored")]
    assert sum("the checkpoint store failed" in m for m in said) == 3, said
    assert any("its ranges must be kept before it is emitted" in m for m in said), said
