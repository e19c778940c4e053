"""Latency against throughput: the word count fed at a steady rate, on each engine.

    python -m benchmarks.latency [--rates 25000,50000,100000,150000,200000] [--secs 40]
        [--hog] [--save]

A spout offers sentences at a steady rate for ``--secs`` seconds of wall time (the rates
are in tuples/s: a sentence is 9 tuples, itself and its 8 words), at the default
configuration (adaptive spout batch, acking on, one acker), through the same ``split ->
count`` topology as ``benchmarks/wordcount.py``; then the run stops as ``--duration``
stops it, draining what is in flight. For each engine and rate: the tuples/s achieved
(all tuples over the run's wall time, drain included), and the complete latency p50/p99
(Storm's: from the spout's emit to the ack of the whole tree) of every tree. A rate the
engine cannot sustain shows as achieved below offered: its sentences then wait in the
source (not counted by Storm's complete latency) and its supersteps grow (counted).

``--hog`` measures every rate twice, quiet and then beside a process that keeps one core
busy (``benchmarks/hog.py``), and gives both tables. With ``--save`` the table goes to
docs/benchmarks/latency.txt and the plot of p99 (and p50) latency against achieved
throughput (the quiet runs) to docs/benchmarks/latency.png.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.hog import cpu_hog, side_by_side
from benchmarks.modes import engine_for
from benchmarks.report import DOCS, figure, report
from examples.word_count import SplitSentence, WordCount, generated_sentences
from sparkstorm import Config, Fields, Spout, TopologyBuilder, run

RATES = (25_000, 50_000, 100_000, 150_000, 200_000)
TUPLES_PER_SENTENCE = 9
ENGINES = ("spark", "continuous", "local")
"""spark: the superstep mode; continuous: sparkstorm.spark.mode=continuous."""


class SteadySpout(Spout):
    """Offers ``rate`` sentences per second from when it opens, each with a msg id.

    ``next_tuple`` emits one sentence when one is due by the wall clock and nothing
    otherwise, so a superstep carries what arrived since the last one, as from a broker.
    A failed sentence is offered again at once.
    """

    def __init__(self, sentences: list[str], rate: float) -> None:
        self.sentences, self.rate = sentences, rate

    def open(self, conf, context, collector):  # type: ignore[no-untyped-def]
        self.collector = collector
        self.started = time.monotonic()
        self.offered = 0
        self.replays: list[int] = []

    def next_tuple(self) -> None:
        if self.replays:
            i = self.replays.pop()
            self.collector.emit([self.sentences[i % len(self.sentences)]], msg_id=i)
            return
        if self.offered < self.rate * (time.monotonic() - self.started):
            i, self.offered = self.offered, self.offered + 1
            self.collector.emit([self.sentences[i % len(self.sentences)]], msg_id=i)

    def activate(self) -> None:
        # the offer starts with the topology: a continuous worker opens its spouts
        # before the stage's other workers are up and the topology is activated
        self.started = time.monotonic()

    def fail(self, msg_id: Any, reason: Any = None) -> None:
        self.replays.append(msg_id)

    def declare_output_fields(self, declarer):  # type: ignore[no-untyped-def]
        declarer.declare(Fields("sentence"))


def steady_run(spark: Any, engine: str, rate: float, secs: float) -> dict[str, float]:
    """One run at ``rate`` tuples/s offered: achieved tuples/s, p50/p99 ms, supersteps."""
    builder = TopologyBuilder()
    sentence_rate = rate / TUPLES_PER_SENTENCE
    builder.set_spout("sentences", SteadySpout(generated_sentences(50_000), sentence_rate))
    builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCount(), 2).fields_grouping("split", Fields("word"))
    conf = Config()
    conf.set_num_ackers(1)
    name = engine_for(engine, conf)
    result = run(
        builder.create_topology(),
        conf,
        engine=name,
        spark=spark if name == "spark" else None,
        duration=secs,
    )
    spout = result.stats["sentences"]
    tuples = spout["emitted"] + result.stats["count"]["executed"]
    return {
        "offered": rate,
        "tps": tuples / result.elapsed_secs,
        "p50": spout["complete_latency_p50_ms"],
        "p99": spout["complete_latency_p99_ms"],
        "supersteps": result.supersteps,
        "failed": spout["failed"],
        "prepares": sum(result.stats[bolt]["prepares"] for bolt in ("split", "count")) / 4,
    }


def measure(
    spark: Any, rates: list[int], secs: float, engines: tuple[str, ...] = ENGINES
) -> tuple[list[str], dict[str, list[dict[str, float]]]]:
    """The latency table and, per engine, every run's figures (for the plot)."""
    runs: dict[str, list[dict[str, float]]] = {engine: [] for engine in engines}
    lines = [
        f"word count at a steady offered rate for {secs:g}s, default configuration, acking "
        "on (complete latency: spout emit to tree acked)",
        f"{'engine':<11}{'offered/s':>11}{'achieved/s':>12}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'steps':>9}{'ms/step':>9}{'failed':>8}{'prepares':>10}",
    ]
    for rate in rates:
        for engine in engines:
            r = steady_run(spark, engine, rate, secs)
            runs[engine].append(r)
            step_ms = 1000 * (secs / max(1, r["supersteps"]))
            lines.append(
                f"{engine:<11}{rate:>11,}{r['tps']:>12,.0f}{r['p50']:>9,.0f}{r['p99']:>9,.0f}"
                f"{r['supersteps']:>9,}{step_ms:>9,.1f}{r['failed']:>8,}{r['prepares']:>10.2f}"
            )
    lines += [
        "achieved: tuples (sentences + words) over the run's wall time, drain included;",
        "below offered, the engine fell behind and sentences waited in the source.",
        "ms/step: the offered period over the supersteps run (drain included).",
        "prepares: prepare() calls per bolt task over the run (4 tasks); on Spark at most",
        "one per Python worker process that ran the task (local[2]: 2 workers).",
    ]
    return lines, runs


def plot(runs: dict[str, list[dict[str, float]]], path: Path) -> None:
    """Complete latency p99 (solid) and p50 (dashed) against achieved tuples/s."""
    title = "Word count at a steady rate: complete latency against throughput"
    xlabel, ylabel = "achieved throughput (thousand tuples/s)", "complete latency (ms, log)"
    with figure(path, title, xlabel, ylabel) as ax:
        for engine, series in runs.items():
            tps = [r["tps"] / 1000 for r in series]
            (line,) = ax.plot(tps, [r["p99"] for r in series], "-o", label=f"{engine} p99")
            p50 = [r["p50"] for r in series]
            ax.plot(tps, p50, "--o", color=line.get_color(), label=f"{engine} p50")
        ax.set_yscale("log")


def main() -> None:
    from benchmarks.wordcount import warmed_session

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rates", default=",".join(map(str, RATES)))
    parser.add_argument("--secs", type=float, default=40.0)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--hog", action="store_true", help="also run beside a CPU hog")
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark, _ = warmed_session()
    rates = [int(rate) for rate in args.rates.split(",")]
    lines: list[str] = []
    quiet_runs: dict[str, list[dict[str, float]]] = {}
    for title, hogged in side_by_side(args.hog):
        with cpu_hog(hogged):
            table, runs = measure(spark, rates, args.secs, tuple(args.engines.split(",")))
        lines += [f"== {title}", *table] if args.hog else table
        quiet_runs = quiet_runs or runs
    spark.stop()
    report("latency", lines, args.save)
    if args.save:
        plot(quiet_runs, DOCS / "latency.png")


if __name__ == "__main__":
    main()
