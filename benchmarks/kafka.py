"""Kafka -> split -> count -> Kafka, beside a bare confluent-kafka loop doing the same.

    python -m benchmarks.kafka [--sentences N] [--rounds R] [--stuck-secs S] [--save]

One noida-db broker on a free loopback port (the tests' broker, ../shared/kafka-brokers.md)
and the same seeded sentences (8 words from a 5,000-word vocabulary) for every row:

- **bare loop**: one Python process, no topology: a confluent-kafka consumer reads the
  sentences, splits them, counts the words and produces each word's count, as the
  topology does, committing every second. The client's own limit on this machine.
- **topology, continuous** (the default mode, acking on): ``examples/kafka_word_count.py``
  (two spout tasks over two partitions, split, count, ``KafkaBolt``) on a warmed
  ``local[2]`` session, until idle; the same on the local engine for reference.
  Records/s count sentences read; the elapsed time is the run's, start-up apart.
  While it runs the group's committed offsets are sampled every 50 ms beside the
  sentences whose counts are all written: the commit lag is how long a sentence done
  waited for its offset to be committed (target: at most ``offset_commit_period_ms``,
  1 s in the example, plus one batch).
- **one record failed for ever**: the local engine, a spout with
  ``max_uncommitted_offsets`` 20,000 fed 2,000 records/s while a bolt fails one record
  on every attempt (it is retried for ever): the process's RSS every 5 s, and what the
  spout acked (at most 20,000 past the stuck record, the pause's bound). It must stay
  flat: the records behind the stuck one are not held, and the partition pauses once
  20,000 of them wait for the commit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from benchmarks.cpu_budget import cpu_snapshot, cpu_used
from benchmarks.report import report
from benchmarks.wordcount import warmed_session
from examples import kafka_word_count as example
from examples.word_count import generated_sentences
from sparkstorm import Bolt, Config, Fields, TopologyBuilder, run
from sparkstorm.connectors.kafka import KafkaSpout, KafkaSpoutConfig
from tests.connectors.kafka_broker import KafkaBroker

PARTITIONS = 2


def cpu_without(broker: KafkaBroker) -> dict[int, tuple[str, float]]:
    """CPU seconds so far of this process and its children, the broker's left out."""
    skip = broker.process.pid if broker.process is not None else -1
    return {pid: v for pid, v in cpu_snapshot().items() if pid != skip}


def bare_loop(broker: KafkaBroker, topic: str, out: str, expected: int) -> float:
    """Sentences/s of one consumer-and-producer process doing the topology's work."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"bare-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    counts: dict[str, int] = {}
    read, started, next_commit = 0, time.perf_counter(), time.monotonic() + 1
    while read < expected:
        for record in consumer.consume(500, timeout=0.1):
            if record.error() is not None:
                continue
            read += 1
            for word in record.value().decode().split():
                counts[word] = counts.get(word, 0) + 1
                while True:
                    try:
                        producer.produce(out, str(counts[word]).encode(), word.encode())
                        break
                    except BufferError:  # the client's queue is full: let it send
                        producer.poll(0.01)
            producer.poll(0)
        if time.monotonic() >= next_commit:
            consumer.commit(asynchronous=False)
            next_commit = time.monotonic() + 1
    producer.flush(30)
    consumer.commit(asynchronous=False)
    elapsed = time.perf_counter() - started
    consumer.close()
    return read / elapsed


class CommitLag:
    """Samples the group's commits and the sentences done, every 50 ms, in a thread."""

    def __init__(self, broker: KafkaBroker, topic: str, out: str) -> None:
        self.broker, self.topic, self.out = broker, topic, out
        self.samples: list[tuple[float, int, int]] = []  # (time, committed, done)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> CommitLag:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()

    def _sample(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": example.GROUP})
        parts = [TopicPartition(self.topic, p) for p in range(PARTITIONS)]
        outs = [TopicPartition(self.out, p) for p in range(PARTITIONS)]
        while not self.stop.wait(0.05):
            committed = sum(max(0, tp.offset) for tp in consumer.committed(parts, timeout=5))
            words = sum(consumer.get_watermark_offsets(tp, timeout=5)[1] for tp in outs)
            self.samples.append((time.monotonic(), committed, words // 8))
        consumer.close()

    def worst_secs(self) -> float:
        """The longest a sentence's counts were all written before its offset was committed."""
        worst = 0.0
        for at, _, done in self.samples:
            later = [t for t, committed, _ in self.samples if t >= at and committed >= done]
            if later:
                worst = max(worst, later[0] - at)
        return worst


def topology_run(
    broker: KafkaBroker, engine: str, spark: Any, sentences: list[str]
) -> tuple[float, float, float, float]:
    """(sentences/s, start-up s, worst commit lag s, CPU s) of the example on ``engine``.

    The CPU is the run's (driver, JVM, workers; start-up and stop included), not the
    publishing's nor the broker's.
    """
    topic, out = broker.topic(PARTITIONS), broker.topic(PARTITIONS)
    example.publish(broker.bootstrap, topic, sentences)
    built, conf = example.build(broker.bootstrap, topic, out)
    if engine == "continuous":
        conf[Config.SPARKSTORM_SPARK_MODE] = "continuous"
    before = cpu_without(broker)
    with CommitLag(broker, topic, out) as lag:
        result = run(
            built,
            conf,
            engine="local" if engine == "local" else "spark",
            spark=spark if engine != "local" else None,
            until_idle=True,
        )
    secs = sum(cpu_used(before, cpu_without(broker)).values())
    acked = result.stats["sentences"]["acked"]
    assert acked == len(sentences), f"{engine}: {acked} of {len(sentences)} sentences acked"
    return acked / result.elapsed_secs, result.startup_secs, lag.worst_secs(), secs


class FailOne(Bolt):
    """Fails the record whose value is ``stuck`` on every attempt; acks the rest."""

    def prepare(self, conf, context, collector):  # type: ignore[no-untyped-def]
        self.collector = collector

    def execute(self, tup):  # type: ignore[no-untyped-def]
        if tup["value"] == "stuck":
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)

    def declare_output_fields(self, declarer):  # type: ignore[no-untyped-def]
        declarer.declare(Fields())


def own_rss_mb() -> float:
    """This process's resident memory (the Spark JVM of the other rows is not in it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def stuck_rss(broker: KafkaBroker, secs: float) -> tuple[list[tuple[float, float]], Any]:
    """(seconds, RSS MB) every 5 s of a run whose one record is failed for ever, and the
    spout's statistics."""
    topic = broker.topic(1)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, b"stuck")
    stop = threading.Event()

    def feed() -> None:  # 2,000 records/s
        while not stop.is_set():
            for _ in range(200):
                producer.produce(topic, b"fine " * 10)
            producer.poll(0)
            time.sleep(0.1)

    config = KafkaSpoutConfig(
        broker.bootstrap,
        [topic],
        "stuck",
        max_uncommitted_offsets=20_000,
        offset_commit_period_ms=500,
    )
    builder = TopologyBuilder()
    builder.set_spout("records", KafkaSpout(config))
    builder.set_bolt("fail-one", FailOne()).shuffle_grouping("records")
    conf = Config()
    conf.set_max_spout_pending(1000)
    samples: list[tuple[float, float]] = []
    started = time.monotonic()

    def sample(_: Any) -> None:
        at = time.monotonic() - started
        if not samples or at - samples[-1][0] >= 5:
            samples.append((at, own_rss_mb()))

    threading.Thread(target=feed, daemon=True).start()
    try:
        result = run(
            builder.create_topology(), conf, engine="local", duration=secs, on_progress=sample
        )
    finally:
        stop.set()
        producer.flush(10)
    return samples, result.stats["records"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--stuck-secs", type=float, default=60.0)
    parser.add_argument("--save", action="store_true", help="write docs/benchmarks/kafka.txt")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    broker = KafkaBroker(Path(tempfile.mkdtemp(prefix="noida-")))
    broker.start()
    try:
        spark, session_secs = warmed_session()
        sentences = generated_sentences(args.sentences)
        topology_run(broker, "continuous", spark, sentences[:2000])  # warm the mode up
        rows: dict[str, list[float]] = {"bare loop": [], "continuous": [], "local": []}
        cpu: dict[str, list[float]] = {name: [] for name in rows}
        """CPU microseconds per sentence, every process but the broker's."""
        lags: list[float] = []
        startups: list[float] = []
        for _ in range(args.rounds):
            topic, out = broker.topic(PARTITIONS), broker.topic(PARTITIONS)
            example.publish(broker.bootstrap, topic, sentences)
            before = cpu_without(broker)
            rows["bare loop"].append(bare_loop(broker, topic, out, len(sentences)))
            secs = sum(cpu_used(before, cpu_without(broker)).values())
            cpu["bare loop"].append(secs / len(sentences) * 1e6)
            for engine in ("continuous", "local"):
                rate, startup, lag, secs = topology_run(broker, engine, spark, sentences)
                rows[engine].append(rate)
                cpu[engine].append(secs / len(sentences) * 1e6)
                if engine == "continuous":
                    lags.append(lag)
                    startups.append(startup)
        bare = statistics.median(rows["bare loop"])
        lines = [
            f"Kafka word count, {len(sentences):,} sentences, median of {args.rounds} rounds "
            f"(Spark session start-up {session_secs:.1f} s, apart)",
            f"{'row':<34}{'sentences/s':>12}{'x bare':>8}{'CPU us/sentence':>17}"
            f"{'bound, 2 cores':>16}",
        ]
        for label, name in (
            ("bare confluent-kafka loop", "bare loop"),
            ("topology, continuous, acking on", "continuous"),
            ("topology, local engine", "local"),
        ):
            rate, us = statistics.median(rows[name]), statistics.median(cpu[name])
            bound = 2 / (us / 1e6)  # both cores busy with nothing else, start-up included
            lines.append(
                f"{label:<34}{rate:>12,.0f}{rate / bare:>8.2f}{us:>17,.0f}{bound / bare:>15.2f}x"
            )
        lines.append(
            "  CPU us/sentence: the driver's, the JVM's and the workers' CPU over the row "
            "(the topology rows' start-up and stop included; the broker's left out). "
            "bound: the rate both cores would give at that CPU a sentence, as x bare."
        )
        lines.append(
            f"continuous: start-up {statistics.median(startups):.1f} s (apart); commit lag, "
            f"worst {max(lags):.2f} s (offset_commit_period_ms 1 s + one batch allowed)"
        )
        samples, spout = stuck_rss(broker, args.stuck_secs)
        shown = "  ".join(f"{at:.0f}s {mb:.0f}MB" for at, mb in samples)
        after = [mb for at, mb in samples if at >= 15] or [mb for _, mb in samples]
        lines.append(
            f"one record failed for ever ({args.stuck_secs:.0f} s, 2,000 records/s offered, "
            f"max_uncommitted_offsets 20,000): spout acked {spout['acked']:,}, failed "
            f"{spout['failed']:,}; driver RSS: {shown}"
        )
        lines.append(
            f"  from 15 s on: {min(after):.0f}-{max(after):.0f} MB "
            f"({(max(after) / min(after) - 1) * 100:.1f}% spread)"
        )
        report("kafka", lines, args.save)
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
