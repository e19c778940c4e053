"""Kafka -> split -> count -> Kafka, beside a bare confluent-kafka loop doing the same.

    python -m benchmarks.kafka [--sentences N] [--rounds R] [--stuck-secs S] [--save]

On each of the two brokers the tests use (../shared/kafka-brokers.md), noida-db and
Tansu, each on a free loopback port, with the same seeded sentences (8 words from a
5,000-word vocabulary) for every row:

- **bare loop**: one Python process, no topology: a confluent-kafka consumer reads the
  sentences, splits them, counts the words and produces each word's count, as the
  topology does, committing every second. The client's own limit on this machine.
- **API floor**: the example's own bolts (split, count, ``KafkaBolt``) called one after
  the other on the bare loop's consumer, in one process, with collectors that only keep
  what is emitted: no engine at all. What any engine keeping Storm's bolt API in
  CPython pays per record before it does anything of its own. Both loops run with the
  young-generation GC threshold the engines give their tasks (``GEN0``).
- **topology, continuous** (the default mode, acking on): ``examples/kafka_word_count.py``
  (two spout tasks over two partitions, split, count, ``KafkaBolt``) on a warmed
  ``local[2]`` session, until idle; the same with acking off (no acker: a record is done
  once emitted); and the local engine, acking on, for reference.

Every row is metered the same way, from outside: a thread reads the output topic's
high watermarks and the group's committed offsets every 20 ms. **Steady** is the rate
at which sentences' counts were written between 25% and 90% of them, start-up apart:
the Spark workers', and the idempotent producer's first write, which librdkafka holds
0.5-1 s (its first ``InitProducerId`` finds no broker up and is retried after 500 ms;
the writes queued meanwhile then leave in a burst). The bare loop and the floor make
their first write before their clock starts; the topology's producers make theirs while
its spouts start reading, and the window leaves that out. **Whole run** is sentences
over the run's elapsed time. The commit lag is how long a sentence whose counts were
all written waited for its offset to be committed (target: at most
``offset_commit_period_ms``, 1 s in the example, plus one batch).

Also measured, because it bends the noida-db rows: what a caught-up consumer costs
(noida-db answers an empty fetch at once, where Kafka and Tansu hold it for
``fetch.wait.max.ms``). And **one record failed for ever**: the local engine, a spout
with ``max_uncommitted_offsets`` 20,000 fed 2,000 records/s while a bolt fails one
record on every attempt: the process's RSS every 5 s, and what the spout acked (at most
20,000 past the stuck record, the pause's bound). It must stay flat.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from benchmarks.api_floor import Appending
from benchmarks.cpu_budget import cpu_snapshot, cpu_used
from benchmarks.report import report
from benchmarks.wordcount import warmed_session
from examples import kafka_arrow_word_count as arrow_example
from examples import kafka_word_count as example
from examples.word_count import generated_sentences
from sparkstorm import Bolt, Config, Fields, TopologyBuilder, run
from sparkstorm.config import DEFAULTS, SPARKSTORM_GC_GEN0_THRESHOLD
from sparkstorm.connectors.kafka import KafkaBolt, KafkaSpout, KafkaSpoutConfig
from sparkstorm.tasks.gc_tuning import fewer_collections
from tests.connectors.kafka_broker import KafkaBroker, TansuBroker

PARTITIONS = 2
GEN0 = DEFAULTS[SPARKSTORM_GC_GEN0_THRESHOLD]
"""The young-generation GC threshold the engines run their tasks with (50,000, not
Python's 700): the loops without an engine get it too. Python's default halves the API
floor (measured: 22,000 sentences/s with it, 45,000 without any collection)."""


def cpu_without(broker: KafkaBroker) -> dict[int, tuple[str, float]]:
    """CPU seconds so far of this process and its children, the broker's left out."""
    skip = broker.process.pid if broker.process is not None else -1
    return {pid: v for pid, v in cpu_snapshot().items() if pid != skip}


@dataclass
class Row:
    """One row's run: what the meter saw, and the CPU every process but the broker's used."""

    steady: float
    """Sentences/s written between 25% and 90% of them."""
    whole: float
    """Sentences over the run's elapsed time (a topology's start-up apart)."""
    cpu_secs: float
    lag_secs: float
    startup_secs: float = 0.0
    unwritten: int = 0
    """Count records whose input was acked (on the broker's delivery report) but that a
    reader of the output topic does not get after the run: the broker's word was wrong."""


def from_start(broker: KafkaBroker, topic: str, group: str) -> Any:
    """A consumer of ``topic``'s partitions from offset 0, committing nothing by itself."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    return consumer


def bare_loop(broker: KafkaBroker, topic: str, out: str, expected: int) -> Row:
    """One consumer-and-producer process doing the topology's work, metered.

    Its producer's first write is made before the clock starts: a topology's producers
    make theirs while the spouts start reading, and the window of the steady rate
    leaves that start out for both.
    """
    group = f"bare-{uuid.uuid4().hex[:6]}"
    consumer = from_start(broker, topic, group)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    producer.produce(broker.topic(1), b"start-up")  # its first write waits 0.5-1 s: apart
    producer.flush(10)
    counts: dict[str, int] = {}
    before = cpu_without(broker)
    with Meter(broker, topic, out, group) as meter, fewer_collections(GEN0):
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
        time.sleep(0.05)  # one more sample of the last writes
    consumer.close()
    secs = sum(cpu_used(before, cpu_without(broker)).values())
    return Row(meter.steady_rate(expected), read / elapsed, secs, meter.worst_lag_secs())


class _Values(dict):  # type: ignore[type-arg]
    """A tuple stand-in for the API floor: values by field name; no ids, no anchors."""

    @property
    def fields(self) -> _Values:
        return self

    def is_tick(self) -> bool:
        return False


def api_floor(broker: KafkaBroker, topic: str, out: str, expected: int) -> Row:
    """The example's own bolts on the bare loop's consumer: no engine, one core, metered.

    ``SplitSentence``, ``IdempotentCount`` and ``KafkaBolt`` (its producer, delivery
    reports included) run one after the other in this process, with collectors that
    only keep what is emitted: no ``Tuple`` objects, ids, routing, acking or transport.
    What is left is the user's code, the client's, and one Python call per ``execute``,
    ``emit`` and ``ack``: what any engine keeping Storm's bolt API in CPython pays per
    record before it does anything of its own (``benchmarks/api_floor.py`` is the same
    for the core word count).
    """
    consumer = from_start(broker, topic, f"floor-{uuid.uuid4().hex[:6]}")
    split, count = example.SplitSentence(), example.IdempotentCount()
    sink = KafkaBolt(broker.bootstrap, out)
    words, counted = Appending(), Appending()
    split.prepare({}, None, words)  # type: ignore[arg-type]
    count.prepare({}, None, counted)  # type: ignore[arg-type]
    sink.prepare({}, None, Appending())  # type: ignore[arg-type]
    sink.producer.produce(broker.topic(1), b"start-up")  # as the bare loop's: apart
    sink.producer.flush(10)
    before = cpu_without(broker)
    with Meter(broker, topic, out, "floor") as meter, fewer_collections(GEN0):
        read, started = 0, time.perf_counter()
        while read < expected:
            for record in consumer.consume(500, timeout=0.1):
                if record.error() is not None:
                    continue
                read += 1
                value = record.value().decode()
                split.execute(
                    _Values(partition=record.partition(), offset=record.offset(), value=value)
                )  # type: ignore[arg-type]
                for record_id, pos, word in words.out:
                    count.execute(_Values(record=record_id, pos=pos, word=word))  # type: ignore[arg-type]
                for key, message in counted.out:
                    sink.execute(_Values(key=key, message=message))  # type: ignore[arg-type]
                words.out.clear()
                counted.out.clear()
        sink.cleanup()
        elapsed = time.perf_counter() - started
        time.sleep(0.05)  # one more sample of the last writes
    consumer.close()
    secs = sum(cpu_used(before, cpu_without(broker)).values())
    return Row(meter.steady_rate(expected), read / elapsed, secs, 0.0)


class Meter:
    """Samples a group's commits and the sentences whose counts are written, every 20 ms.

    Written sentences are the output topic's records over 8 (a sentence has 8 words),
    read from its high watermarks: the same meter for every row, from outside.
    """

    def __init__(self, broker: KafkaBroker, topic: str, out: str, group: str) -> None:
        self.broker, self.topic, self.out, self.group = broker, topic, out, group
        self.samples: list[tuple[float, int, int]] = []  # (time, committed, written)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> Meter:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()

    def _sample(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": self.group})
        parts = [TopicPartition(self.topic, p) for p in range(PARTITIONS)]
        outs = [TopicPartition(self.out, p) for p in range(PARTITIONS)]
        while not self.stop.wait(0.02):
            committed = sum(max(0, tp.offset) for tp in consumer.committed(parts, timeout=5))
            words = sum(consumer.get_watermark_offsets(tp, timeout=5)[1] for tp in outs)
            self.samples.append((time.monotonic(), committed, words // 8))
        consumer.close()

    def worst_lag_secs(self) -> float:
        """The longest a sentence's counts were all written before its offset was committed."""
        worst = 0.0
        for at, _, done in self.samples:
            later = [t for t, committed, _ in self.samples if t >= at and committed >= done]
            if later:
                worst = max(worst, later[0] - at)
        return worst

    def records_now(self) -> int:
        """The output topic's records, asked of the broker now (after the run)."""
        return sum(high - low for low, high in self._out_ends())

    def _out_ends(self) -> list[tuple[int, int]]:
        """(low, high) watermarks of the output topic's partitions, asked now."""
        consumer = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": self.group})
        outs = [TopicPartition(self.out, p) for p in range(PARTITIONS)]
        ends = [consumer.get_watermark_offsets(tp, timeout=5) for tp in outs]
        consumer.close()
        return ends

    def records_read(self) -> int:
        """The output topic's records, read back to the end (what a reader gets)."""
        consumer = from_start(self.broker, self.out, f"read-back-{uuid.uuid4().hex[:6]}")
        read, idle_since = 0, time.monotonic()
        while time.monotonic() - idle_since < 3:
            got = [r for r in consumer.consume(1000, timeout=0.2) if r.error() is None]
            if got:
                read, idle_since = read + len(got), time.monotonic()
        consumer.close()
        return read

    def _short_of(self, total: int) -> str:
        """Why a run did not reach the window's end: what was sampled, and what is now."""
        now = self._out_ends()
        seen = sorted({(c, n) for _, c, n in self.samples})
        return (
            f"the meter saw at most {seen[-1][1]} of {total} sentences written to {self.out} "
            f"(committed, written: {seen[:3]} ... {seen[-3:]}); its watermarks now: {now}"
        )

    def steady_rate(self, total: int, low: float = 0.25, high: float = 0.9) -> float:
        """Sentences/s written from ``low`` to ``high`` of ``total`` (start-up apart).

        From the last sample below ``low`` to the first at ``high`` or above: the window
        holds the crossing points, so a short run is measured a little low, never high.
        """
        written = [(t, n) for t, _, n in self.samples]
        start = [(t, n) for t, n in written if n < low * total][-1]
        end = next(((t, n) for t, n in written if n >= high * total), None)
        assert end is not None, self._short_of(total)
        return (end[1] - start[1]) / (end[0] - start[0])


def topology_run(
    broker: KafkaBroker,
    engine: str,
    spark: Any,
    sentences: list[str],
    ackers: int = 1,
    columns: bool = False,
) -> Row:
    """The example on ``engine`` (``continuous`` or ``local``), metered; with ``columns``,
    ``examples/kafka_arrow_word_count.py``.

    The CPU is the run's (driver, JVM, workers; start-up and stop included), not the
    publishing's nor the broker's.
    """
    topic, out = broker.topic(PARTITIONS), broker.topic(PARTITIONS)
    example.publish(broker.bootstrap, topic, sentences)
    chosen = arrow_example if columns else example
    built, conf = chosen.build(broker.bootstrap, topic, out)
    conf.set_num_ackers(ackers)
    if engine == "continuous":
        conf[Config.SPARKSTORM_SPARK_MODE] = "continuous"
    before = cpu_without(broker)
    with Meter(broker, topic, out, chosen.GROUP) as meter:
        result = run(
            built,
            conf,
            engine="local" if engine == "local" else "spark",
            spark=spark if engine != "local" else None,
            until_idle=True,
        )
        time.sleep(0.05)  # one more sample of the last writes
    secs = sum(cpu_used(before, cpu_without(broker)).values())
    acked = result.stats["sentences"]["acked"]
    assert acked == len(sentences), f"{engine}: {acked} of {len(sentences)} sentences acked"
    bolt = result.stats["counts"]
    unwritten = max(0, acked * 8 - meter.records_now())
    if unwritten:  # Tansu's watermark trails by its last batch: read the records back
        unwritten = max(0, acked * 8 - meter.records_read())
    if unwritten:
        print(
            f"{broker.name}, {engine}: {acked} sentences acked, the KafkaBolt acked "
            f"{bolt['acked']} inputs (its ticks included) and failed {bolt['failed']}, but "
            f"{unwritten} of their {acked * 8} count records are not in {out}",
            file=sys.stderr,
        )
    return Row(
        meter.steady_rate(len(sentences)),
        acked / result.elapsed_secs,
        secs,
        meter.worst_lag_secs(),
        result.startup_secs,
        unwritten,
    )


def caught_up_consumer_cpu(broker: KafkaBroker, secs: float = 2.0) -> tuple[float, float]:
    """(client, broker) CPU seconds of one consumer at the end of its partition for ``secs``.

    Kafka holds an empty fetch for ``fetch.wait.max.ms`` (500 ms); a broker that answers
    it at once has the client's fetcher thread ask again and again.
    """
    topic = broker.topic(1)
    broker.produce(topic, [b"one"])
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "idle", "auto.offset.reset": "earliest"}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    while consumer.poll(1.0) is None:
        pass
    pid = broker.process.pid if broker.process is not None else os.getpid()
    client, server = time.process_time(), process_cpu(pid)
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        consumer.poll(0.1)
    used = time.process_time() - client, process_cpu(pid) - server
    consumer.close()
    return used


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_write_secs(broker: KafkaBroker, idempotent: bool) -> float:
    """Seconds from a new producer to its first write's delivery report."""
    topic = broker.topic(1)
    started = time.perf_counter()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": idempotent})
    reported: list[float] = []
    producer.produce(topic, b"one", on_delivery=lambda *_: reported.append(time.perf_counter()))
    producer.flush(10)
    return reported[0] - started


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


ROWS = (
    ("bare confluent-kafka loop", "bare", ""),
    ("API floor: the bolts alone, 1 core", "floor", ""),
    ("topology, continuous, acking on", "continuous", ""),
    ("topology, continuous, acking off", "continuous", "off"),
    ("topology, local engine, acking on", "local", ""),
    ("in columns (Arrow), continuous, acking on", "continuous", "columns"),
)


def broker_rows(
    broker: KafkaBroker, spark: Any, sentences: list[str], rounds: int, only: str | None
) -> list[str]:
    """The table's rows on ``broker``: each row ``rounds`` times, interleaved; medians.

    ``only``: a word the labels of the rows to run hold (the bare loop always runs).
    """
    rows = [r for r in ROWS if r is ROWS[0] or only is None or only in r[0]]
    runs: dict[str, list[Row]] = {label: [] for label, _, _ in rows}
    lines = []
    try:  # warm the mode up; what goes wrong is said in the table, not hidden
        warm = topology_run(broker, "continuous", spark, sentences[:2000])
        if warm.unwritten:
            lines.append(
                f"{'':4}the warm-up run: {warm.unwritten} of 16,000 count records acked on "
                "the broker's delivery report are not in the output topic"
            )
    except AssertionError as exc:
        lines.append(f"{'':4}the warm-up run: {exc}")
    for _ in range(rounds):
        for label, engine, acking in rows:
            if engine in ("bare", "floor"):
                topic, out = broker.topic(PARTITIONS), broker.topic(PARTITIONS)
                example.publish(broker.bootstrap, topic, sentences)
                loop = bare_loop if engine == "bare" else api_floor
                runs[label].append(loop(broker, topic, out, len(sentences)))
            else:
                ackers = 0 if acking == "off" else 1
                runs[label].append(
                    topology_run(broker, engine, spark, sentences, ackers, acking == "columns")
                )
    bare = statistics.median(r.steady for r in runs[ROWS[0][0]])
    for label, engine, acking in rows:
        done = runs[label]
        steady = statistics.median(r.steady for r in done)
        whole = statistics.median(r.whole for r in done)
        us = statistics.median(r.cpu_secs for r in done) / len(sentences) * 1e6
        bound = 2 / (us / 1e6)  # both cores busy with nothing else, start-up included
        lines.append(
            f"{broker.name + ', ' + label:<54}{steady:>9,.0f}{steady / bare:>7.2f}"
            f"{whole:>10,.0f}{us:>9,.0f}{bound / bare:>9.2f}x"
        )
        lost = sum(r.unwritten for r in done)
        if lost:
            lines.append(
                f"{'':4}{lost} count records acked on the broker's delivery report are not "
                f"in the output topic ({len(done)} runs of {len(sentences) * 8:,} each)"
            )
        if engine == "continuous" and acking != "off":
            lag = max(r.lag_secs for r in done)
            startup = statistics.median(r.startup_secs for r in done)
            lines.append(
                f"{'':4}start-up {startup:.2f} s (apart); commit lag, worst {lag:.2f} s "
                "(offset_commit_period_ms 1 s + one batch allowed)"
            )
    client, server = caught_up_consumer_cpu(broker)
    lines.append(
        f"{'':4}a consumer caught up for 2 s costs {client:.2f} s CPU in the client and "
        f"{server:.2f} s in {broker.name}; an idempotent producer's first write is "
        f"confirmed after {first_write_secs(broker, True):.2f} s "
        f"({first_write_secs(broker, False):.3f} s without idempotence)"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--stuck-secs", type=float, default=60.0, help="0: leave that run out")
    parser.add_argument("--save", action="store_true", help="write docs/benchmarks/kafka.txt")
    parser.add_argument(
        "--only", help="run the rows whose label holds this word (and the bare loop)"
    )
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark, session_secs = warmed_session()
    sentences = generated_sentences(args.sentences)
    lines = [
        f"Kafka word count, {len(sentences):,} sentences, median of {args.rounds} rounds "
        f"(Spark session start-up {session_secs:.1f} s, apart)",
        f"{'broker, row':<54}{'steady/s':>9}{'x bare':>7}{'whole/s':>10}{'CPU us':>9}{'bound':>10}",
    ]
    for kind in (KafkaBroker, TansuBroker):
        broker = kind(Path(tempfile.mkdtemp(prefix="kafka-bench-")))
        broker.start()
        try:
            lines += broker_rows(broker, spark, sentences, args.rounds, args.only)
            if kind is KafkaBroker and args.stuck_secs > 0:
                samples, spout = stuck_rss(broker, args.stuck_secs)
        finally:
            broker.stop()
    lines.append(
        "  steady/s: sentences whose counts were written per second, from 25% to 90% of "
        "them (start-up apart), read from the output topic's watermarks every 20 ms; x bare: "
        "against the bare loop on the same broker. whole/s: over the run (the idempotent "
        "producer's first write in). CPU us: a sentence's CPU in the driver, the JVM and the "
        "workers over the whole run (the broker's left out). bound: the steady rate both "
        "cores would give at that CPU a sentence, as x bare."
    )
    if args.stuck_secs > 0:
        lines += stuck_lines(samples, spout, args.stuck_secs)
    report("kafka", lines, args.save)


def stuck_lines(samples: list[tuple[float, float]], spout: Any, secs: float) -> list[str]:
    """The lines of the run with one record failed for ever."""
    lines = []
    shown = "  ".join(f"{at:.0f}s {mb:.0f}MB" for at, mb in samples)
    after = [mb for at, mb in samples if at >= 15] or [mb for _, mb in samples]
    lines.append(
        f"one record failed for ever (noida-db, {secs:.0f} s, 2,000 records/s "
        f"offered, max_uncommitted_offsets 20,000): spout acked {spout['acked']:,}, failed "
        f"{spout['failed']:,}; driver RSS: {shown}"
    )
    lines.append(
        f"  from 15 s on: {min(after):.0f}-{max(after):.0f} MB "
        f"({(max(after) / min(after) - 1) * 100:.1f}% spread)"
    )
    return lines


if __name__ == "__main__":
    main()
