"""Columns: the Arrow word count, every sentence a tracked message, beside Spark's columns.

    python -m benchmarks.arrow [--sentences N] [--rounds R] [--rate ROWS] [--secs S] [--save]

One process, the same seeded sentences (8 words from a 5,000-word vocabulary) for every
row: ``examples/arrow_word_count.py`` (an Arrow spout, a pyarrow split anchoring every
word to its sentence, a pyarrow count; each sentence one message, acked once its words
are counted) on the continuous mode and on the local engine; the fastest PySpark a Spark
user would write for it (the same pyarrow split in ``mapInArrow``, ``groupBy().count()``
in the JVM, nothing tracked); Structured Streaming with that split, at its steady rate
(its first micro-batch apart); and the core word count (tuples) on the continuous mode.
Spark is warmed up first and its start-up reported apart; rounds interleave the rows;
the table gives medians. Throughput counts sentences split plus words counted.

The latency line: the continuous mode offered ``--rate`` rows a second for ``--secs``
seconds, rows counted as throughput is (a sentence and its 8 words are 9 rows, so
1,000,000 rows/s is 111,111 sentences/s); each message's complete latency, from its
emit to its ack.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.modes import engine_for
from benchmarks.report import report
from benchmarks.streaming import structured_streaming
from benchmarks.wordcount import sparkstorm_run, warmed_session
from examples import arrow_word_count
from examples.word_count import generated_sentences
from sparkstorm import Fields, TopologyBuilder, run
from sparkstorm.arrow import ArrowSpout

TUPLES_PER_SENTENCE = 9


def arrow_split(batches: Any) -> Any:
    """The Arrow bolt's split, for ``mapInArrow``."""
    for batch in batches:
        yield pa.record_batch([pc.list_flatten(pc.split_pattern(batch.column(0), " "))], ["word"])


def pyspark(spark: Any, sentences: list[str]) -> float:
    """Tuples/s of the fastest PySpark word count: pyarrow split, JVM count, no tracking."""
    started = time.perf_counter()
    df = spark.createDataFrame(pa.table({"sentence": sentences})).repartition(2)
    counts = df.mapInArrow(arrow_split, "word string").groupBy("word").count().collect()
    elapsed = time.perf_counter() - started
    words = sum(row["count"] for row in counts)
    assert words == 8 * len(sentences), words
    return (len(sentences) + words) / elapsed


def arrow_run(spark: Any, engine: str, sentences: list[str]) -> dict[str, float]:
    """Tuples/s and complete latency of the Arrow word count."""
    topology, conf = arrow_word_count.topology(sentences)
    name = engine_for(engine, conf)
    result = run(topology, conf, name, spark if name == "spark" else None)
    stats = result.stats
    assert stats["sentences"]["acked"] == len(sentences), stats["sentences"]
    return {
        "tps": len(sentences) * TUPLES_PER_SENTENCE / result.elapsed_secs,
        "p99": stats["sentences"]["complete_latency_p99_ms"],
    }


class SteadyBatches(ArrowSpout):
    """Offers ``rate`` sentences a second for ``secs`` seconds, each a message: what is due,
    every ``every`` seconds at most (a source polled that often)."""

    def __init__(self, sentences: list[str], rate: float, secs: float, every: float) -> None:
        self.sentences, self.rate, self.secs, self.every = sentences, rate, secs, every

    def open(self, conf, context, collector):  # type: ignore[no-untyped-def]
        self.collector = collector
        self.text = pa.array(self.sentences)
        self.start = time.monotonic()
        self.sent = 0
        self.last = 0.0

    def next_batch(self):  # type: ignore[no-untyped-def]
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        elapsed = min(now - self.start, self.secs)
        due = min(int(elapsed * self.rate), len(self.sentences))
        if due > self.sent:
            ids = list(range(self.sent, due))
            batch = pa.record_batch([self.text.slice(self.sent, due - self.sent)], ["sentence"])
            self.collector.emit_batch(batch, ids)
            self.sent = due

    def ack_batch(self, msg_ids):  # type: ignore[no-untyped-def]
        pass

    def declare_output_fields(self, declarer):  # type: ignore[no-untyped-def]
        declarer.declare(Fields("sentence"))


POLL_SECS = 0.005
"""How often the latency run's spout takes what is due: a source polled every 5 ms."""


def latency(spark: Any, rate: float, secs: float) -> dict[str, float]:
    """Complete latency on the continuous mode at ``rate`` rows a second offered."""
    per_second = rate / TUPLES_PER_SENTENCE
    sentences = generated_sentences(int(per_second * secs) + 1, seed=7)
    builder = TopologyBuilder()
    builder.set_spout("sentences", SteadyBatches(sentences, per_second, secs, POLL_SECS))
    builder.set_bolt("split", arrow_word_count.Split(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", arrow_word_count.Count(), 2).fields_grouping("split", Fields("word"))
    conf: dict[str, Any] = {}
    name = engine_for("continuous", conf)
    result = run(builder.create_topology(), conf, name, spark)
    stats = result.stats["sentences"]
    return {
        "p50": stats["complete_latency_p50_ms"],
        "p99": stats["complete_latency_p99_ms"],
        "achieved": stats["acked"] * TUPLES_PER_SENTENCE / result.elapsed_secs,
        "acked": stats["acked"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rate", type=float, default=1_000_000, help="rows/s offered")
    parser.add_argument("--secs", type=float, default=10)
    parser.add_argument("--save", action="store_true", help="write docs/benchmarks/arrow.txt")
    parser.add_argument("--latency-only", action="store_true", help="only the latency line")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark, session_secs = warmed_session()
    if args.latency_only:
        latency(spark, args.rate, 2)  # warm
        print(latency(spark, args.rate, args.secs))
        spark.stop()
        return
    sentences = generated_sentences(args.sentences)
    small = sentences[:50_000]
    pyspark(spark, small)  # its path warmed up too
    arrow_run(spark, "continuous", small)
    structured_streaming(spark, small, split=arrow_split)
    runs: dict[str, list[float]] = {
        "arrow, continuous": [],
        "arrow, local engine": [],
        "PySpark (pyarrow split, JVM count)": [],
        "Structured Streaming (same split)": [],
        "core API (tuples), continuous": [],
    }
    p99s: list[float] = []
    core = sentences[: min(len(sentences), 200_000)]
    for _ in range(args.rounds):
        measured = arrow_run(spark, "continuous", sentences)
        runs["arrow, continuous"].append(measured["tps"])
        p99s.append(measured["p99"])
        runs["arrow, local engine"].append(arrow_run(spark, "local", sentences)["tps"])
        runs["PySpark (pyarrow split, JVM count)"].append(pyspark(spark, sentences))
        ss = structured_streaming(spark, sentences, split=arrow_split)
        runs["Structured Streaming (same split)"].append(ss["steady_tps"])
        runs["core API (tuples), continuous"].append(
            sparkstorm_run(spark, "continuous", 1, core)["tps"]
        )
    steady = latency(spark, args.rate, args.secs)
    spark.stop()
    median = {label: statistics.median(tps) for label, tps in runs.items()}
    base = median["PySpark (pyarrow split, JVM count)"]
    ss = median["Structured Streaming (same split)"]
    lines = [
        f"Arrow word count, {len(sentences):,} sentences x 8 words (the core row: "
        f"{len(core):,}), {args.rounds} interleaved rounds (medians); Spark local[2] "
        f"session start-up {session_secs:.1f}s",
        f"{'row':<40}{'tuples/s':>12}{'x PySpark':>11}{'x SS':>7}",
    ]
    for label, tps in median.items():
        lines.append(f"{label:<40}{tps:>12,.0f}{tps / base:11.2f}{tps / ss:7.2f}")
    lines += [
        f"arrow, continuous: complete latency p99 {statistics.median(p99s):,.0f} ms "
        f"(every sentence a message; batches of {arrow_word_count.BATCH_ROWS:,} rows, "
        f"{8 * arrow_word_count.BATCH_ROWS:,} pending at most)",
        f"complete latency, continuous, {args.rate:,.0f} rows/s offered for {args.secs:g}s "
        f"({args.rate / TUPLES_PER_SENTENCE:,.0f} sentences/s): p50 {steady['p50']:.0f} ms, "
        f"p99 {steady['p99']:.0f} ms ({steady['achieved']:,.0f} rows/s achieved, "
        f"{steady['acked']:,.0f} messages acked)",
        "PySpark: createDataFrame of the sentences, mapInArrow(the pyarrow split),",
        "groupBy('word').count().collect(); Structured Streaming: file source, the same",
        "split, streaming groupBy().count() to the noop sink (benchmarks/streaming.py)",
    ]
    report("arrow", lines, args.save)


if __name__ == "__main__":
    main()
