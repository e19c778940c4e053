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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sentences = generated_sentences(args.sentences)
    run_once(sentences[:2000], 1)  # warm up
    results: dict[int, list[float]] = {1: [], 0: []}
    for _ in range(args.rounds):
        for ackers in (1, 0):
            results[ackers].append(run_once(sentences, ackers)[0])
    on, off = statistics.median(results[1]), statistics.median(results[0])
    ratios = [a / b for a, b in zip(results[1], results[0], strict=True)]
    print(
        f"local engine, word count, {args.sentences:,} sentences x 8 words, "
        f"{args.rounds} interleaved rounds (median)"
    )
    print(f"  acking on  (1 acker): {on:>10,.0f} tuples/s")
    print(f"  acking off (0 ackers): {off:>10,.0f} tuples/s")
    print(
        f"  on/off ratio: {statistics.median(ratios):.2f} "
        f"(per-round {min(ratios):.2f}-{max(ratios):.2f}); off is "
        f"{100 * (off / on - 1):.0f}% faster"
    )


if __name__ == "__main__":
    main()
