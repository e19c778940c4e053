"""Word count on the local engine, acking on vs off, interleaved rounds (issue: Core target).

    python -m benchmarks.local_engine [--sentences N] [--rounds R]

Throughput counts tuples executed by user bolts (sentences by split + words by count)
per wall second, on one core. Rounds alternate acking on and off so that drift of this
shared machine hits both sides alike; the table gives medians.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchmarks.machine import machine
from examples.word_count import build, generated_sentences
from sparkstorm import Config
from sparkstorm.testing import LocalCluster


def run_once(sentences: list[str], ackers: int) -> tuple[float, dict]:
    topology, conf = build(sentences, parallelism=1, ackers=ackers)
    conf[Config.SPARKSTORM_SPOUT_BATCH] = 1000
    with LocalCluster(engine="local", simulated_time=False) as cluster:
        started = time.perf_counter()
        cluster.submit_topology("wc", conf, topology)
        cluster.wait_until_idle()
        elapsed = time.perf_counter() - started
        stats = cluster.stats("wc")
    assert stats["sentences"]["acked"] == len(sentences), stats["sentences"]
    tuples = stats["split"]["executed"] + stats["count"]["executed"]
    return tuples / elapsed, stats


def report(lines: list[str], save: bool) -> None:
    """Print the table; with ``save``, write it under docs/benchmarks/ with the machine."""
    text = "\n".join([*lines, machine()]) + "\n"
    print(text, end="")
    if save:
        out = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "local_engine.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--save",
        action="store_true",
        help="also write the table to docs/benchmarks/local_engine.txt",
    )
    args = parser.parse_args()
    lines: list[str] = []
    sentences = generated_sentences(args.sentences)
    run_once(sentences[:2000], 1)  # warm up
    results: dict[int, list[float]] = {1: [], 0: []}
    for _ in range(args.rounds):
        for ackers in (1, 0):
            results[ackers].append(run_once(sentences, ackers)[0])
    on, off = statistics.median(results[1]), statistics.median(results[0])
    ratios = [a / b for a, b in zip(results[1], results[0], strict=True)]
    lines.append(
        f"local engine, word count, {args.sentences:,} sentences x 8 words, "
        f"{args.rounds} interleaved rounds (median)"
    )
    lines.append(f"  acking on  (1 acker): {on:>10,.0f} tuples/s")
    lines.append(f"  acking off (0 ackers): {off:>10,.0f} tuples/s")
    lines.append(
        f"  on/off ratio: {statistics.median(ratios):.2f} "
        f"(per-round {min(ratios):.2f}-{max(ratios):.2f}); off is "
        f"{100 * (off / on - 1):.0f}% faster"
    )
    report(lines, args.save)


if __name__ == "__main__":
    main()
