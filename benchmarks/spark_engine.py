"""Word count on the Spark engine vs a plain-PySpark baseline, side by side.

    python -m benchmarks.spark_engine [--sentences N] [--rounds R] [--batch B]

All runs share one ``local[2]`` session, warmed up first (Spark's first Python job is
slow); start-up is reported apart. The baseline does the same split with the same
Python function through ``mapInArrow`` and counts with ``groupBy``, with no tracking.
Throughput counts tuples executed by user code: sentences split plus words counted.
Rounds interleave the three configurations; the table gives medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import pyarrow as pa

from benchmarks.machine import machine
from examples.word_count import build, generated_sentences, split_sentence
from sparkstorm import Config, run


def baseline(spark, sentences: list[str]) -> tuple[float, int]:
    """Plain PySpark: the same split, groupBy count, no per-message tracking."""

    def split(batches):
        for batch in batches:
            words = [w for s in batch.column(0).to_pylist() for w in split_sentence(s)]
            yield pa.RecordBatch.from_pydict({"word": words})

    started = time.perf_counter()
    df = spark.createDataFrame(pa.table({"sentence": sentences})).repartition(2)
    counts = df.mapInArrow(split, "word string").groupBy("word").count().collect()
    elapsed = time.perf_counter() - started
    words = sum(row["count"] for row in counts)
    return (len(sentences) + words) / elapsed, words


def sparkstorm_run(spark, sentences: list[str], ackers: int, batch: int) -> tuple[float, dict]:
    topology, conf = build(sentences, parallelism=2, ackers=ackers)
    conf[Config.SPARKSTORM_SPOUT_BATCH] = batch
    result = run(topology, conf, engine="spark", spark=spark)
    stats = result.stats
    assert stats["sentences"]["acked"] == len(sentences), stats["sentences"]
    tuples = stats["split"]["executed"] + stats["count"]["executed"]
    return tuples / result.elapsed_secs, {
        "startup": result.startup_secs,
        "supersteps": result.supersteps,
    }


def report(lines: list[str], save: bool) -> None:
    """Print the table; with ``save``, write it under docs/benchmarks/ with the machine."""
    text = "\n".join([*lines, machine()]) + "\n"
    print(text, end="")
    if save:
        out = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "spark_engine.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=20_000)
    parser.add_argument(
        "--save",
        action="store_true",
        help="also write the table to docs/benchmarks/spark_engine.txt",
    )
    args = parser.parse_args()
    lines: list[str] = []
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from sparkstorm.engines.spark import create_session

    t0 = time.perf_counter()
    spark = create_session("local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    session_start = time.perf_counter() - t0
    sentences = generated_sentences(args.sentences)
    baseline(spark, sentences[:1000])  # warm up: the first Python job is slow
    sparkstorm_run(spark, sentences[:1000], 1, args.batch)
    results: dict[str, list[float]] = {"baseline": [], "acking on": [], "acking off": []}
    extra = {}
    for _ in range(args.rounds):
        results["baseline"].append(baseline(spark, sentences)[0])
        tps, extra["on"] = sparkstorm_run(spark, sentences, 1, args.batch)
        results["acking on"].append(tps)
        tps, extra["off"] = sparkstorm_run(spark, sentences, 0, args.batch)
        results["acking off"].append(tps)
    base = statistics.median(results["baseline"])
    lines.append(
        f"spark local[2], word count, {args.sentences:,} sentences x 8 words, "
        f"spout batch {args.batch:,}, {args.rounds} interleaved rounds (median)"
    )
    lines.append(
        f"  session start-up {session_start:.1f}s; topology start-up "
        f"{extra['on']['startup']:.2f}s; supersteps per run {extra['on']['supersteps']}"
    )
    for name, values in results.items():
        tps = statistics.median(values)
        lines.append(f"  {name:<11} {tps:>10,.0f} tuples/s  {tps / base:5.2f}x baseline")
    on, off = statistics.median(results["acking on"]), statistics.median(results["acking off"])
    lines.append(f"  acking on/off: {on / off:.2f}")
    spark.stop()
    report(lines, args.save)


if __name__ == "__main__":
    main()
