"""Trident spouts over NATS JetStream: a batch is a sequence range, replayed exactly.

A JetStream stream feeds a Trident word count into a Redis map whose every fifth write
fails after writing, three batches in flight; then the topology is killed, more messages
are published, and it is submitted again: it goes on from the ranges kept with the last
committed txid.
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
import redis

from sparkstorm import Fields, InvalidTopologyError
from sparkstorm.connectors.nats_jetstream_trident import (
    NatsJetStreamOpaqueTridentSpout,
    NatsJetStreamTridentSpout,
)
from sparkstorm.trident import Count, TridentTopology
from sparkstorm.trident.state.redis import RedisMapState
from tests.conftest import REDIS_URL
from tests.connectors.test_nats_jetstream import URL, js
from tests.trident.ops import FlakyMap, Split
from tests.trident.test_map_states import stored_counts

pytestmark = pytest.mark.services


@pytest.fixture
def stream():
    name = f"trident_{uuid.uuid4().hex[:8]}"

    async def create(jsm):
        await jsm.add_stream(name=name, subjects=[f"{name}.>"])

    js(create)
    yield name

    async def delete(jsm):
        await jsm.delete_stream(name)

    js(delete)
    client = redis.Redis.from_url(REDIS_URL)
    client.delete(f"sparkstorm:trident:{name}", *client.keys(f"{name}:*"))


def publish(stream: str, sentences: list[str]) -> None:
    async def send(jsm):
        for i, sentence in enumerate(sentences):
            await jsm.publish(f"{stream}.{'ab'[i % 2]}", sentence.encode())

    js(send)


def word_count(spout, factory) -> TridentTopology:
    topology = TridentTopology()
    (
        topology.new_stream("stream", spout)
        .each(Fields("data"), Split(), Fields("word"))
        .parallelism_hint(2)
        .group_by(Fields("word"))
        .persistent_aggregate(factory, Count(), Fields("count"))
        .parallelism_hint(2)
    )
    return topology


@pytest.mark.parametrize(
    ("kind", "spout_class"),
    [("transactional", NatsJetStreamTridentSpout), ("opaque", NatsJetStreamOpaqueTridentSpout)],
)
def test_a_stream_counted_exactly_once_through_failures_and_a_restart(
    kind, spout_class, cluster_factory, stream
):
    sentences = [f"w{i % 13} w{i % 7} common" for i in range(600)]
    conf = {
        "topology.max.spout.pending": 3,
        "topology.state.provider": "redis",
        "topology.state.provider.config": {"url": REDIS_URL, "key_prefix": stream},
    }
    cluster = cluster_factory("local")
    for part in (sentences[:400], sentences[400:]):
        publish(stream, part)
        spout = spout_class(URL, stream, max_batch_size=50)
        factory = FlakyMap(getattr(RedisMapState, kind)(REDIS_URL, stream))
        cluster.submit_topology("nats-counts", conf, word_count(spout, factory).build())
        cluster.wait_until_idle()
        cluster.kill_topology("nats-counts")
    expected = Counter(w for s in sentences for w in s.split())
    assert stored_counts(stream, kind) == expected


def test_the_tuples_are_sequence_subject_and_payload_and_a_subject_filters(cluster_factory, stream):
    publish(stream, ["one", "two", "three", "four"])  # subjects .a .b .a .b
    topology = TridentTopology()
    spout = NatsJetStreamTridentSpout(URL, stream, subject=f"{stream}.a")
    topology.new_stream("stream", spout).each(Fields("data"), Split(), Fields("word")).name("seen")
    cluster = cluster_factory("local")
    cluster.submit_topology("nats-tuples", {"sparkstorm.capture": ["seen"]}, topology.build())
    cluster.wait_until_idle()
    seen = cluster.captured("nats-tuples", "seen", "seen")
    assert seen == [[1, f"{stream}.a", "one", "one"], [3, f"{stream}.a", "three", "three"]]


def test_an_opaque_spout_into_a_transactional_map_is_refused(stream):
    spout = NatsJetStreamOpaqueTridentSpout(URL, stream)
    topology = word_count(spout, RedisMapState.transactional(REDIS_URL, stream))
    with pytest.raises(InvalidTopologyError, match="the opaque spout 'stream' feeds"):
        topology.build()


def test_a_url_that_is_not_nats_is_refused_naming_it():
    with pytest.raises(ValueError, match="NatsJetStreamTridentSpout"):
        NatsJetStreamTridentSpout("http://127.0.0.1:8222", "x")
