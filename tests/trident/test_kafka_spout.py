"""Trident spouts over Kafka (noida-db): a batch is an offset range per partition.

A two-partition topic feeds a Trident word count into a Redis map whose every fifth
write fails after writing, three batches in flight; the topology is killed, more records
are produced, and it is submitted again: it goes on from the ranges kept with the last
committed txid. The offsets are committed to the consumer group too.
"""

from __future__ import annotations

import uuid
from collections import Counter

import pyarrow as pa
import pytest
import redis

from sparkstorm import Fields, InvalidTopologyError
from sparkstorm.connectors.kafka_trident import (
    KafkaArrowTridentSpoutOpaque,
    KafkaArrowTridentSpoutTransactional,
    KafkaTridentSpoutOpaque,
    KafkaTridentSpoutTransactional,
)
from sparkstorm.trident import Count, TridentTopology
from sparkstorm.trident.state.redis import RedisMapState
from sparkstorm.trident.tuple import TridentCollector
from tests.conftest import REDIS_URL
from tests.trident.ops import FailOnceOn, FlakyMap, Split
from tests.trident.test_columns import ArrowSplit
from tests.trident.test_map_states import stored_counts

pytestmark = pytest.mark.services


@pytest.fixture
def names():
    name = f"kt_{uuid.uuid4().hex[:8]}"
    yield name
    client = redis.Redis.from_url(REDIS_URL)
    client.delete(f"sparkstorm:trident:{name}", *client.keys(f"{name}:*"))


def word_count(spout, factory, marker: str = "", columns: bool = False) -> TridentTopology:
    """The count; with ``marker``, the batch that first meets ``w5`` fails once (and is
    emitted again from its offset ranges). ``columns``: split with pyarrow."""
    topology = TridentTopology()
    split = ArrowSplit() if columns else Split()
    words = topology.new_stream("records", spout).each(Fields("value"), split, Fields("token"))
    if marker:
        words = words.each(Fields("token"), FailOnceOn("w5", marker), Fields("word"))
    else:
        words = words.each(Fields("token"), Split(), Fields("word"))
    (
        words.parallelism_hint(2)
        .group_by(Fields("word"))
        .persistent_aggregate(factory, Count(), Fields("count"))
        .parallelism_hint(2)
    )
    return topology


@pytest.mark.parametrize(
    ("kind", "spout_class"),
    [
        ("transactional", KafkaTridentSpoutTransactional),
        ("opaque", KafkaTridentSpoutOpaque),
        ("transactional", KafkaArrowTridentSpoutTransactional),
        ("opaque", KafkaArrowTridentSpoutOpaque),
    ],
    ids=["transactional", "opaque", "transactional-columns", "opaque-columns"],
)
def test_a_topic_counted_exactly_once_through_failures_and_a_restart(
    kind,
    spout_class,
    kafka,
    names,
    cluster_factory,
    tmp_path,
):
    topic = kafka.topic(partitions=2)
    sentences = [f"w{i % 13} w{i % 7} common" for i in range(600)]
    conf = {
        "topology.max.spout.pending": 3,
        "topology.state.provider": "redis",
        "topology.state.provider.config": {"url": REDIS_URL, "key_prefix": names},
    }
    cluster = cluster_factory("local")
    for part in (sentences[:400], sentences[400:]):
        half = len(part) // 2
        kafka.produce(topic, [s.encode() for s in part[:half]], partition=0)
        kafka.produce(topic, [s.encode() for s in part[half:]], partition=1)
        spout = spout_class(kafka.bootstrap, topic, names, max_batch_size=50)
        factory = FlakyMap(getattr(RedisMapState, kind)(REDIS_URL, names))
        marker = str(tmp_path / f"failed-{len(part)}")
        columns = "Arrow" in spout_class.__name__
        topology = word_count(spout, factory, marker, columns)
        cluster.submit_topology("kafka-counts", conf, topology.build())
        cluster.wait_until_idle()
        cluster.kill_topology("kafka-counts")
    expected = Counter(w for s in sentences for w in s.split())
    assert (tmp_path / "failed-400").exists() and (tmp_path / "failed-200").exists()
    assert stored_counts(names, kind) == expected
    assert kafka.committed(names, topic, partitions=2) == [300, 300]  # the group sees it


def test_an_opaque_spout_into_a_transactional_map_is_refused(kafka, names):
    spout = KafkaTridentSpoutOpaque(kafka.bootstrap, "x", names)
    topology = word_count(spout, RedisMapState.transactional(REDIS_URL, names))
    with pytest.raises(InvalidTopologyError, match="the opaque spout 'records' feeds"):
        topology.build()


def test_a_columnar_spout_emits_a_partitions_records_as_one_record_batch(kafka, names):
    """Text columns; a batch holding a record that is not UTF-8 has bytes, and a batch
    partition of batches of two schemas goes on as rows."""
    topic = kafka.topic(partitions=1)
    kafka.produce(topic, [b"a b", b"c"], partition=0)
    spout = KafkaArrowTridentSpoutTransactional(kafka.bootstrap, topic, names)
    emitter = spout.get_emitter({}, None)
    try:
        records, first, last = emitter.read_after(f"{topic}/0", None)
        collector = TridentCollector()
        emitter.emit_records(collector, records)
        part = collector.part()
        assert isinstance(part, pa.RecordBatch), part
        assert part.schema.names == ["topic", "partition", "offset", "key", "value"]
        assert part.column("value").to_pylist() == ["a b", "c"] and (first, last) == (0, 1)
        kafka.produce(topic, [b"\xff"], partition=0)
        odd, _, _ = emitter.read_after(f"{topic}/0", {"from": 0, "to": 1})
        emitter.emit_records(collector, odd)
        assert collector.batches[-1].column("value").to_pylist() == [b"\xff"]
        rows = collector.part()  # text and bytes: one partition of rows
        assert [row[4] for row in rows] == ["a b", "c", b"\xff"]
    finally:
        emitter.close()


def test_the_emitter_fetches_nothing_between_its_batches(kafka):
    """Between two batches the emitter's consumer is assigned nothing. Left assigned at
    the end of its range, it sent fetches that the broker holds for fetch.wait.max.ms
    (500 ms), and the next batch's watermark request queued behind them: up to a second
    a batch (measured on Tansu: 0.48 s a watermark, 0.52 s a read)."""
    from sparkstorm.connectors.kafka_trident import _consumer, _read_records

    topic = kafka.topic()
    kafka.produce(topic, [f"r{i}".encode() for i in range(30)])
    consumer = _consumer(kafka.bootstrap, f"g-{uuid.uuid4().hex[:6]}", {})
    try:
        records = _read_records(consumer, topic, 0, 10, 19)
        assert [r.offset() for r in records] == list(range(10, 20))
        assert consumer.assignment() == []
    finally:
        consumer.close()
