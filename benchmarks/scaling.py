"""How cost grows with work: the Spark word count at 3 sizes and 1, 2 and 4 tasks per bolt.

    python -m benchmarks.scaling [--sizes 100000,500000,2000000] [--save]

Every configuration runs once, in one process, on Spark ``local[2]`` (warmed up first),
with acking on, plus acking off (2 tasks per bolt) and both plain-PySpark baselines
(see ``benchmarks/wordcount.py``) at each size for reference. For each run: tuples/s,
supersteps, mean time per superstep, and where the wall time went, from the always-on
phase timers of ``RunResult.profile`` (see ``sparkstorm/tasks/profile.py``):

- spout: the driver's spout loop (outcomes, ticks, ``next_tuple``, tracking);
- arrow: the driver turning rows into envelopes and Arrow, and the collected rows back;
- spark: the Spark job minus its slowest Python partition (scheduling, shuffle,
  checkpoint, moving Arrow batches between the JVM and the Python workers);
- python: the slowest Python partition of each superstep (what the job waited for),
  split by share of all partition time into decode (envelopes to tuples), bolts (user
  code with its collectors), acker, encode (emits and state to envelopes) and Arrow.

With ``--save`` the table goes to docs/benchmarks/scaling.txt and the plot of
throughput against size to docs/benchmarks/scaling.png.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from benchmarks.report import DOCS, figure, report
from benchmarks.wordcount import baseline, sparkstorm_run
from examples.word_count import generated_sentences

TASKS = (1, 2, 4)
SIZES = (100_000, 500_000, 2_000_000)


def configurations() -> list[tuple[str, int, int]]:
    """(label, tasks per bolt, ackers) of every sparkstorm run at a size."""
    on = [(f"acking on, {n} task{'s' if n > 1 else ''}/bolt", n, 1) for n in TASKS]
    return [*on, ("acking off, 2 tasks/bolt", 2, 0)]


def breakdown(run: dict[str, Any]) -> str:
    """Shares of the run's wall time, and of the Python partitions' time, by phase."""
    p, wall = run["profile"], run["elapsed"]
    python = p.get("partition_critical", 0.0)
    spark = p.get("spark_job", 0.0) - python
    worker_total = sum(p.get(k, 0.0) for k in ("decode", "execute", "encode", "worker_arrow"))
    acker = min(run["acker_secs"], p.get("execute", 0.0))
    bolts = p.get("execute", 0.0) - acker

    def share(secs: float, of: float) -> str:
        return f"{100 * secs / of:4.0f}%" if of > 0 else f"{'-':>5}"

    return (
        f"{share(p.get('spout', 0.0), wall)}{share(p.get('driver_arrow', 0.0), wall)}"
        f"{share(spark, wall)}{share(python, wall)} |"
        f"{share(p.get('decode', 0.0), worker_total)}{share(bolts, worker_total)}"
        f"{share(acker, worker_total)}{share(p.get('encode', 0.0), worker_total)}"
        f"{share(p.get('worker_arrow', 0.0), worker_total)}"
    )


def measure(spark: Any, sizes: list[int]) -> tuple[list[str], dict[str, list[tuple[int, float]]]]:
    """The scaling table and the points to plot: label -> [(sentences, tuples/s)]."""
    corpus = generated_sentences(max(sizes))
    points: dict[str, list[tuple[int, float]]] = {}
    lines = [
        "Spark local[2] word count by size and tasks per bolt (one run each; acker: 1 task)",
        f"{'sentences':>10} {'configuration':<26}{'tuples/s':>10}{'x base':>7}{'steps':>6}"
        f"{'ms/step':>8} |{'spout':>5}{'arrow':>5}{'spark':>5}{'pyth':>5} |"
        f"{'dec':>5}{'bolts':>5}{'acker':>5}{'enc':>5}{'arrw':>5}",
    ]
    for size in sizes:
        sentences = corpus[:size]
        base = baseline(spark, sentences)["tps"]
        points.setdefault("plain PySpark", []).append((size, base))
        lines.append(f"{size:>10,} {'plain PySpark':<26}{base:>10,.0f}{1:>7.2f}")
        jvm = baseline(spark, sentences, count_in="jvm")["tps"]
        points.setdefault("PySpark, JVM count", []).append((size, jvm))
        lines.append(f"{size:>10,} {'PySpark, JVM count':<26}{jvm:>10,.0f}{jvm / base:>7.2f}")
        for label, tasks, ackers in configurations():
            run = sparkstorm_run(spark, "spark", ackers, sentences, parallelism=tasks)
            points.setdefault(label, []).append((size, run["tps"]))
            step_ms = 1000 * run["elapsed"] / max(1, run["supersteps"])
            lines.append(
                f"{size:>10,} {label:<26}{run['tps']:>10,.0f}{run['tps'] / base:>7.2f}"
                f"{run['supersteps']:>6}{step_ms:>8.0f} |{breakdown(run)}"
            )
    lines += [
        "spout/arrow/spark/pyth: shares of the run's wall time (driver spout loop; driver",
        "rows<->Arrow; the Spark job minus its slowest Python partition; that partition).",
        "With pipelined supersteps the driver's shares overlap the job's: they may sum past 100%.",
        "dec/bolts/acker/enc/arrw: shares of all Python partition time (envelopes to tuples;",
        "bolt code with collectors; the acker; emits and state to envelopes; Arrow columns).",
    ]
    return lines, points


def plot(points: dict[str, list[tuple[int, float]]], path: Path) -> None:
    """Throughput against size, one line per configuration, as a PNG."""
    import matplotlib.ticker

    title = "Word count on Spark local[2]: throughput by size"
    xlabel, ylabel = "sentences (8 words each)", "tuples/s (sentences split + words counted, log)"
    with figure(path, title, xlabel, ylabel) as ax:
        for label, series in points.items():
            style = "--" if "PySpark" in label else ":" if "off" in label else "-"
            ax.plot(*zip(*series, strict=True), style, marker="o", label=label)
        ax.set_xscale("log")
        sizes = sorted({size for series in points.values() for size, _ in series})
        ax.set_xticks(sizes, [_thousands(size, 0) for size in sizes])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_yscale("log")  # the baselines run 5-20x faster: a linear axis flattens the rest
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_thousands))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(_thousands))


def _thousands(value: float, _pos: int) -> str:
    return f"{value / 1e6:g}M" if value >= 1e6 else f"{value / 1e3:g}k"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from benchmarks.wordcount import warmed_session

    spark, _ = warmed_session()
    lines, points = measure(spark, [int(s) for s in args.sizes.split(",")])
    spark.stop()
    report("scaling", lines, args.save)
    if args.save:
        plot(points, DOCS / "scaling.png")


if __name__ == "__main__":
    main()
