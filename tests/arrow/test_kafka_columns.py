"""Kafka in columns against a real broker (noida-db, started by the tests).

``KafkaArrowSpout`` keeps ``KafkaSpout``'s promises a record at a time though it emits
batches: a record failed is tried again alone, dead-lettered after ``max_retries + 1``
attempts, an undecodable one set aside at once, and the offsets committed past exactly
what is done. ``KafkaArrowBolt`` acks a row once its write is confirmed, and a write
refused or failed fails its own row. The fault suite (``tests/connectors/test_faults.py``,
source ``kafka-arrow``) runs it through ``sparkstorm run`` with stops and kills.
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from examples import kafka_arrow_word_count as example
from examples.kafka_word_count import publish
from examples.word_count import generated_sentences
from sparkstorm import Config, Fields, TopologyBuilder
from sparkstorm.arrow import KafkaArrowBolt, KafkaArrowSpout
from sparkstorm.connectors.kafka import ATTEMPTS_HEADER, REASON_HEADER, KafkaSpoutConfig
from tests.conftest import run_on
from tests.connectors.test_kafka import FailFirstSight, Upper, spout_config

pytestmark = pytest.mark.services


def columns_topology(config, batch_rows=16):
    """The columnar spout, in batches of ``batch_rows``, into ``FailFirstSight``."""
    builder = TopologyBuilder()
    builder.set_spout("records", KafkaArrowSpout(config, batch_rows), 2)
    builder.set_bolt("check", FailFirstSight(), 2).fields_grouping(
        "records", Fields("partition", "offset")
    )
    conf = Config({Config.SPARKSTORM_CAPTURE: ["check"]})
    conf.set_message_timeout_secs(10)
    return builder.create_topology(), conf


def test_every_record_once_retried_or_dead_lettered_alone_and_committed_past(kafka):
    """Batches of 16 mixing healthy records, records failed once, a poison one and an
    undecodable one: each record has its own outcome."""
    topic, group = kafka.topic(partitions=2), f"g-{uuid.uuid4().hex[:6]}"
    kafka.topic_named(f"{topic}-dead")
    values = [f"w{i % 7} common" for i in range(120)]
    kafka.produce(topic, [v.encode() for v in values[:60]], partition=0)
    kafka.produce(topic, [b"\xff\xfe", *(v.encode() for v in values[60:90])], partition=1)
    kafka.produce(topic, [b"poison", *(v.encode() for v in values[90:])], partition=1)
    built, conf = columns_topology(spout_config(kafka, topic, group))
    result = run_on("local", built, conf, until_idle=True)
    seen = Counter((p, o) for p, o, _ in result.captured[("check", "default")])
    healthy = [(0, o) for o in range(60)] + [(1, o) for o in range(1, 31)]
    healthy += [(1, o) for o in range(32, 62)]
    assert seen == Counter(healthy)  # each once
    assert kafka.committed(group, topic, partitions=2) == [60, 62]
    dead = {record.value(): dict(record.headers()) for record in kafka.read(f"{topic}-dead", 2)}
    assert dead[b"poison"][ATTEMPTS_HEADER] == b"3"  # max_retries + 1
    assert dead[b"poison"][REASON_HEADER].startswith(b"explicit by check:")
    assert dead[b"\xff\xfe"][ATTEMPTS_HEADER] == b"0"
    assert dead[b"\xff\xfe"][REASON_HEADER].startswith(b"undecodable")
    spout = result.stats["records"]
    assert spout["fail_reasons"] == {"explicit": 17 + 3}  # each w3 once, the poison 3 times
    assert spout["acked"] == 120
    assert any("not utf-8 text" in e.message for e in result.errors)


def test_the_example_counts_every_word_and_commits_every_record(kafka):
    """examples/kafka_arrow_word_count.py on the local engine: a word's last count record
    is its count, and every record's offset is committed."""
    topic, counts_topic = kafka.topic(2), kafka.topic(2)
    sentences = generated_sentences(300, vocabulary=50)
    publish(kafka.bootstrap, topic, sentences)
    built, conf = example.build(kafka.bootstrap, topic, counts_topic)
    result = run_on("local", built, conf, until_idle=True)
    assert (result.stats["sentences"]["acked"], result.stats["sentences"]["failed"]) == (300, 0)
    latest = {}
    written = sorted(kafka.read_all(counts_topic, 2), key=lambda r: r.offset())
    for record in written:
        latest[record.key().decode()] = int(record.value())  # a key's records: one partition
    words = Counter(w for s in sentences for w in s.split())
    assert latest == words
    assert len(written) == sum(words.values())  # one count record a word
    committed = kafka.committed(example.GROUP, topic, 2)
    assert sum(max(0, offset) for offset in committed) == len(sentences), committed


def sink_topology(kafka, source, bolt, retries=0):
    """Records -> ``Upper`` -> ``bolt``, the spout's failed records dead-lettered after
    ``retries + 1`` attempts."""
    config = spout_config(kafka, source, f"g-{uuid.uuid4().hex[:6]}")
    config.retry = type(config.retry)(0.0, 0.01, max_retries=retries, max_delay_secs=0.1)
    builder = TopologyBuilder()
    builder.set_spout("records", KafkaArrowSpout(config))
    builder.set_bolt("upper", Upper()).shuffle_grouping("records")
    builder.set_bolt("out", bolt).shuffle_grouping("upper")
    return builder.create_topology()


def test_the_bolt_fails_a_refused_write_alone_and_acks_the_rest(kafka):
    """One value is larger than the producer takes: its row is failed (each attempt),
    the record dead-lettered; the other rows of its batches are written and acked."""
    source, sink = kafka.topic(), kafka.topic()
    kafka.topic_named(f"{source}-dead")
    kafka.produce(source, [f"word {i}".encode() for i in range(40)])
    kafka.produce(source, [b"big " + b"x" * 3000])
    kafka.produce(source, [f"word {i}".encode() for i in range(40, 50)])
    bolt = KafkaArrowBolt(
        kafka.bootstrap, sink, "key", "message", extra={"message.max.bytes": 2000}
    )
    result = run_on("local", sink_topology(kafka, source, bolt, retries=1), {}, until_idle=True)
    spout = result.stats["records"]
    assert (spout["acked"], spout["failed"]) == (50, 2)
    assert sorted(r.value() for r in kafka.read(sink, 50)) == sorted(
        f"WORD {i}".encode() for i in range(50)
    )
    (letter,) = kafka.read(f"{source}-dead", 1)
    assert letter.value().startswith(b"big ")
    assert dict(letter.headers())[ATTEMPTS_HEADER] == b"2"
    errors = [e.message for e in result.errors]
    assert any("KafkaArrowBolt 'out': 1 of" in e and "size too large" in e for e in errors)


def test_a_full_producer_queue_slows_the_bolt_down_and_fails_nothing(kafka):
    """librdkafka's queue holds 5 records: the rows that did not fit wait for room, the
    bolt serving delivery reports meanwhile."""
    source, sink = kafka.topic(), kafka.topic()
    kafka.topic_named(f"{source}-dead")
    kafka.produce(source, [f"word {i}".encode() for i in range(200)])
    small = KafkaArrowBolt(
        kafka.bootstrap, sink, "key", "message", extra={"queue.buffering.max.messages": 5}
    )
    result = run_on("local", sink_topology(kafka, source, small), {}, until_idle=True)
    spout = result.stats["records"]
    assert (spout["acked"], spout["failed"]) == (200, 0)
    assert len(kafka.read(sink, 200)) == 200


def test_a_failed_delivery_fails_its_rows_and_says_which_topic(kafka):
    """The broker refuses every write (the topic's name is invalid): no row is acked,
    every record is failed and dead-lettered, and the error names the bolt and topic."""
    source = kafka.topic()
    kafka.topic_named(f"{source}-dead")
    kafka.produce(source, [f"word {i}".encode() for i in range(10)])
    bolt = KafkaArrowBolt(kafka.bootstrap, "not a topic!", "key", "message")
    result = run_on("local", sink_topology(kafka, source, bolt), {}, until_idle=True)
    spout = result.stats["records"]
    assert (spout["acked"], spout["failed"]) == (0, 10)
    assert spout["fail_reasons"] == {"explicit": 10}
    assert len(kafka.read(f"{source}-dead", 10)) == 10
    # the broker refuses the name ("Broker: Invalid topic"), or the client already knows
    # from its metadata that no such topic exists ("Local: Unknown topic"): either is said
    said = [e.message for e in result.errors if "KafkaArrowBolt 'out'" in e.message]
    assert any("writes to 'not a topic!' failed" in m for m in said), said
    assert any("Invalid topic" in m or "Unknown topic" in m for m in said), said


def test_a_translator_or_an_empty_batch_size_is_refused(kafka):
    translated = KafkaSpoutConfig(
        kafka.bootstrap, ["x"], "g", record_translator=lambda r: [1], output_fields=["n"]
    )
    with pytest.raises(ValueError, match="translate them in an ArrowBolt"):
        KafkaArrowSpout(translated)
    with pytest.raises(ValueError, match="batch_rows=0"):
        KafkaArrowSpout(KafkaSpoutConfig(kafka.bootstrap, ["x"], "g"), batch_rows=0)
