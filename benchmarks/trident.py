"""Trident's word count on every engine, beside Structured Streaming and the core API.

    python -m benchmarks.trident [--sentences N] [--rounds R] [--batch B] [--save]

One process, the same seeded sentences (8 words from a 5,000-word vocabulary) for every
row: Storm's Trident word count (one sentence spout, ``each(Split)``,
``group_by(word)``, ``persistent_aggregate(Count)``, parallelism 2) into
``MemoryMapState`` and into a Redis transactional map, on the local engine and on
Spark's superstep and continuous modes, at default settings (one batch in flight) with
``FixedBatchSpout`` batches of ``--batch`` sentences; Structured Streaming's stateful word
count (exactly once too, ``benchmarks/streaming.py``); and the core API's word count in
the continuous mode (``examples/word_count.py``, acking on). Spark is warmed up first and
its start-up reported apart. Rounds interleave the rows; the table gives medians.
Throughput counts tuples handled by user code: sentences split plus words counted.

The latency line: the continuous mode fed at a steady rate (``--rate`` tuples/s, a
sentence is 9 tuples) for ``--secs`` seconds into ``MemoryMapState``; for each batch,
the time from the spout's ``emit_batch`` to its ``ack`` (which follows the commit).
Meanwhile a DRPC query (the sum of one sentence's counts) goes through the run's REST
API every 50 ms; its line gives the HTTP call's latency.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import redis

from benchmarks.modes import engine_for
from benchmarks.report import report
from benchmarks.streaming import structured_streaming
from benchmarks.wordcount import sparkstorm_run, warmed_session
from examples.word_count import generated_sentences, split_sentence
from sparkstorm import Fields, run
from sparkstorm.connectors.kafka_trident import (
    KafkaTridentSpoutTransactional,
    TridentKafkaStateFactory,
    TridentKafkaStateUpdater,
)
from sparkstorm.trident import (
    BaseFunction,
    Count,
    FilterNull,
    FixedBatchSpout,
    IBatchSpout,
    InMemoryWindowsStoreFactory,
    MapGet,
    MemoryMapState,
    Sum,
    TridentTopology,
)
from sparkstorm.trident.state.redis import RedisMapState
from tests.connectors.kafka_broker import KafkaBroker

REDIS_URL = "redis://127.0.0.1:6379/0"
TUPLES_PER_SENTENCE = 9


class Split(BaseFunction):
    """The core word count's split, as a Trident function."""

    def execute(self, tup, collector):  # type: ignore[no-untyped-def]
        for word in split_sentence(tup[0]):
            collector.emit([word])


def word_count(spout: Any, factory: Any, drpc: bool = False) -> Any:
    """Storm's Trident word count; with ``drpc``, its ``words`` function (no LocalDRPC)."""
    topology = TridentTopology()
    counts = (
        topology.new_stream("sentences", spout)
        .each(Fields("sentence"), Split(), Fields("word"))
        .parallelism_hint(2)
        .group_by(Fields("word"))
        .persistent_aggregate(factory, Count(), Fields("count"))
        .parallelism_hint(2)
    )
    if drpc:
        (
            topology.new_drpc_stream("words")
            .each(Fields("args"), Split(), Fields("word"))
            .group_by(Fields("word"))
            .state_query(counts, Fields("word"), MapGet(), Fields("count"))
            .each(Fields("count"), FilterNull())
            .aggregate(Fields("count"), Sum(), Fields("sum"))
        )
    return topology.build()


def windowed(spout: Any) -> Any:
    """The split, then tumbling windows of 10,000 words in each partition, counted."""
    topology = TridentTopology()
    (
        topology.new_stream("sentences", spout)
        .each(Fields("sentence"), Split(), Fields("word"))
        .parallelism_hint(2)
        .tumbling_window(
            WINDOW, InMemoryWindowsStoreFactory(), Fields("word"), Count(), Fields("n")
        )
    )
    return topology.build()


WINDOW = 10_000
"""Words a tumbling window of the windowing row holds."""


def windowed_run(spark: Any, sentences: list[str], batch: int) -> float:
    """Tuples/s of the windowed count, continuous mode."""
    spout = FixedBatchSpout(Fields("sentence"), batch, *([s] for s in sentences))
    conf: dict[str, Any] = {}
    result = run(windowed(spout), conf, engine_for("continuous", conf), spark)
    assert result.stats["trident-coordinator"]["failed"] == 0
    return len(sentences) * TUPLES_PER_SENTENCE / result.elapsed_secs


def kafka_sink_run(
    spark: Any, broker: Any, source: str, sentences: int, batch: int, transactional: bool
) -> float:
    """Tuples/s of a Kafka spout -> split -> the Kafka sink, continuous mode: sentences
    read plus words written (each word a record), metered as the run's own time."""
    name = f"bench_{uuid.uuid4().hex[:8]}"
    sink = broker.topic(partitions=2)
    spout = KafkaTridentSpoutTransactional(broker.bootstrap, source, name, max_batch_size=batch)
    factory = TridentKafkaStateFactory(
        broker.bootstrap, sink, value_field="word", transactional=transactional
    )
    topology = TridentTopology()
    (
        topology.new_stream("records", spout)
        .each(Fields("value"), Split(), Fields("word"))
        .parallelism_hint(2)
        .partition_persist(factory, Fields("word"), TridentKafkaStateUpdater())
        .parallelism_hint(2)
    )
    conf: dict[str, Any] = {
        "topology.state.provider": "redis",
        "topology.state.provider.config": {"url": REDIS_URL, "key_prefix": name},
    }
    try:
        result = run(topology.build(), conf, engine_for("continuous", conf), spark)
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        keys = client.keys(f"{name}:*")
        if keys:
            client.delete(*keys)
    assert result.stats["trident-coordinator"]["failed"] == 0
    return sentences * TUPLES_PER_SENTENCE / result.elapsed_secs


def trident_run(spark: Any, row: str, store: str, sentences: list[str], batch: int) -> float:
    """Tuples/s of one Trident word count over ``sentences``."""
    name = f"bench-{uuid.uuid4().hex[:8]}"
    factory = (
        MemoryMapState.Factory()
        if store == "memory"
        else RedisMapState.transactional(REDIS_URL, name)
    )
    spout = FixedBatchSpout(Fields("sentence"), batch, *([s] for s in sentences))
    conf: dict[str, Any] = {"topology.name": name}
    engine = engine_for(row, conf)
    try:
        result = run(word_count(spout, factory), conf, engine, spark if engine == "spark" else None)
    finally:
        if store == "redis":
            redis.Redis.from_url(REDIS_URL).delete(f"sparkstorm:trident:{name}")
    coordinator = result.stats["trident-coordinator"]
    assert coordinator["failed"] == 0, coordinator
    return len(sentences) * TUPLES_PER_SENTENCE / result.elapsed_secs


class SteadySpout(IBatchSpout):
    """Offers sentences at a steady rate; writes each batch's emit-to-ack seconds to a file."""

    def __init__(self, sentences: list[str], rate: float, secs: float, out: str) -> None:
        self.sentences, self.rate, self.secs, self.out = sentences, rate, secs, out

    def open(self, conf, context):  # type: ignore[no-untyped-def]
        self.start = time.monotonic()
        self.sent = 0
        self.batches: dict[int, tuple[float, list[str]]] = {}

    def emit_batch(self, batch_id, collector):  # type: ignore[no-untyped-def]
        if batch_id not in self.batches:
            elapsed = min(time.monotonic() - self.start, self.secs)
            due = int(elapsed * self.rate / TUPLES_PER_SENTENCE)
            taken = self.sentences[self.sent : due]
            self.sent = max(self.sent, due)
            self.batches[batch_id] = (time.monotonic(), taken)
        for sentence in self.batches[batch_id][1]:
            collector.emit([sentence])

    def ack(self, batch_id):  # type: ignore[no-untyped-def]
        emitted, taken = self.batches.pop(batch_id)
        if taken:
            with open(self.out, "a") as out:
                out.write(json.dumps([len(taken), time.monotonic() - emitted]) + "\n")

    def get_output_fields(self) -> Fields:
        return Fields("sentence")


def latency(spark: Any, rate: float, secs: float) -> dict[str, float]:
    """Emit-to-commit latency of each batch, the continuous mode fed at ``rate`` tuples/s.

    Meanwhile a DRPC query against the counts goes through the run's REST API every
    50 ms: its latency is the HTTP call's, ``POST .../drpc/words``.
    """
    sentences = generated_sentences(int(rate * secs / TUPLES_PER_SENTENCE) + 1, seed=7)
    queries: list[float] = []
    running = threading.Event()

    def ask(runtime: Any) -> None:
        def loop() -> None:
            url = f"{runtime.api_url}/api/v1/topology/bench-drpc/drpc/words"
            until = time.monotonic() + secs  # while the spout offers sentences
            with httpx.Client(timeout=30) as http:
                while running.is_set() and time.monotonic() < until:
                    started = time.monotonic()
                    response = http.post(url, content=sentences[0].encode())
                    response.raise_for_status()
                    queries.append(time.monotonic() - started)
                    time.sleep(0.05)

        running.set()
        threading.Thread(target=loop, daemon=True).start()

    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp, "latencies"))
        spout = SteadySpout(sentences, rate, secs, out)
        conf: dict[str, Any] = {}
        engine = engine_for("continuous", conf)
        topology = word_count(spout, MemoryMapState.Factory(), drpc=True)
        try:
            result = run(topology, conf, engine, spark, api=True, name="bench-drpc", on_start=ask)
        finally:
            running.clear()
        rows = [json.loads(line) for line in Path(out).read_text().splitlines()]
    seconds = sorted(s for _, s in rows)
    done = sum(n for n, _ in rows) * TUPLES_PER_SENTENCE
    return {
        "p50": 1000 * statistics.median(seconds),
        "p99": 1000 * percentile(seconds, 0.99),
        "batches": len(rows),
        "achieved": done / result.elapsed_secs,
        "drpc_p50": 1000 * statistics.median(queries),
        "drpc_p99": 1000 * percentile(sorted(queries), 0.99),
        "queries": len(queries),
    }


def latency_line(steady: dict[str, float], rate: float, secs: float) -> str:
    """The latency and DRPC lines of the report."""
    return (
        f"emit-to-commit latency, continuous, {rate:,.0f} tuples/s offered for "
        f"{secs:g}s into MemoryMapState: p50 {steady['p50']:.0f} ms, p99 "
        f"{steady['p99']:.0f} ms over {steady['batches']:.0f} batches "
        f"({steady['achieved']:,.0f} tuples/s achieved)\n"
        f"DRPC query against the counts meanwhile (REST API, every 50 ms): p50 "
        f"{steady['drpc_p50']:.1f} ms, p99 {steady['drpc_p99']:.1f} ms over "
        f"{steady['queries']:.0f} queries"
    )


def percentile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of ``ordered`` (nearest rank)."""
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def local_cpu(sentences: list[str], batch: int) -> float:
    """µs of CPU a tuple, the local engine (one process), start-up included."""
    spout = FixedBatchSpout(Fields("sentence"), batch, *([s] for s in sentences))
    topology = word_count(spout, MemoryMapState.Factory())
    before = time.process_time()
    run(topology, {}, "local")
    return 1e6 * (time.process_time() - before) / (len(sentences) * TUPLES_PER_SENTENCE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=10_000, help="sentences a batch")
    parser.add_argument("--rate", type=float, default=100_000, help="tuples/s offered")
    parser.add_argument("--secs", type=float, default=20)
    parser.add_argument(
        "--kafka-sentences", type=int, default=50_000, help="sentences the Kafka rows read"
    )
    parser.add_argument("--save", action="store_true", help="write docs/benchmarks/trident.txt")
    parser.add_argument(
        "--latency-only", action="store_true", help="only the latency and DRPC lines"
    )
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark, session_secs = warmed_session()
    if args.latency_only:
        print(latency_line(latency(spark, args.rate, args.secs), args.rate, args.secs))
        spark.stop()
        return
    sentences = generated_sentences(args.sentences)
    rows = [
        (f"trident {row}, {store}", row, store)
        for store in ("memory", "redis")
        for row in ("local", "spark", "continuous")
    ]
    runs: dict[str, list[float]] = {label: [] for label, _, _ in rows}
    runs["trident continuous, windows"] = []
    runs["Structured Streaming"] = []
    runs["core API, continuous"] = []
    ss_whole: list[float] = []
    broker = KafkaBroker(Path(tempfile.mkdtemp(prefix="sparkstorm-bench-noida-")))
    broker.start()
    source = broker.topic(partitions=2)
    kafka_sentences = sentences[: args.kafka_sentences]
    broker.produce(source, [s.encode() for s in kafka_sentences])
    sinks = {True: "trident continuous, Kafka sink exactly once", False: ""}
    sinks[False] = "trident continuous, Kafka sink at least once"
    for label in sinks.values():
        runs[label] = []
    structured_streaming(spark, sentences[:20_000])  # warm the streaming path up
    for _ in range(args.rounds):
        ss = structured_streaming(spark, sentences)
        runs["Structured Streaming"].append(ss["steady_tps"])
        ss_whole.append(ss["tps"])
        runs["core API, continuous"].append(
            sparkstorm_run(spark, "continuous", 1, sentences)["tps"]
        )
        for label, row, store in rows:
            runs[label].append(trident_run(spark, row, store, sentences, args.batch))
        runs["trident continuous, windows"].append(windowed_run(spark, sentences, args.batch))
        for transactional, label in sinks.items():
            runs[label].append(
                kafka_sink_run(
                    spark, broker, source, len(kafka_sentences), args.batch, transactional
                )
            )
    broker.stop()
    steady = latency(spark, args.rate, args.secs)
    spark.stop()
    cpu = {b: local_cpu(sentences, b) for b in (1_000, args.batch)}

    median = {label: statistics.median(tps) for label, tps in runs.items()}
    ss, core = median["Structured Streaming"], median["core API, continuous"]
    lines = [
        f"Trident word count, {len(sentences):,} sentences x 8 words, batches of "
        f"{args.batch:,} sentences, {args.rounds} interleaved rounds (medians); "
        f"Spark local[2] session start-up {session_secs:.1f}s",
        f"{'row':<46}{'tuples/s':>10}{'x SS':>7}{'x core':>8}",
    ]
    for label, tps in median.items():
        lines.append(f"{label:<46}{tps:>10,.0f}{tps / ss:7.2f}{tps / core:8.2f}")
    lines += [
        *latency_line(steady, args.rate, args.secs).splitlines(),
        "CPU per tuple, local engine, start-up included: "
        + ", ".join(f"batches of {b:,} {us:.2f} us" for b, us in cpu.items()),
        f"Structured Streaming is its steady rate, its first micro-batch apart (over the "
        f"whole query: {statistics.median(ss_whole):,.0f} tuples/s)",
        f"windows: the split, then tumbling windows of {WINDOW:,} words a partition, counted "
        f"(InMemoryWindowsStoreFactory)",
        f"Kafka sink: {len(kafka_sentences):,} sentences from a 2-partition topic "
        f"(noida-db), split, each word a record into a 2-partition topic; progress in Redis",
        "trident rows: one batch in flight (topology.max.spout.pending default), parallelism",
        "2 for the split and for the state; spark: the superstep mode; continuous:",
        "sparkstorm.spark.mode=continuous; redis: RedisMapState.transactional on loopback;",
        "Structured Streaming: file source, the same split in mapInArrow, streaming",
        "groupBy().count() to the noop sink (benchmarks/streaming.py); core API: the",
        "split -> count topology of examples/word_count.py, acking on, continuous mode",
    ]
    report("trident", lines, args.save)


if __name__ == "__main__":
    main()
