"""What delivering within a partition saves: Spark word count with and without hops.

    python -m benchmarks.local_hops [--sentences N] [--rounds R]

The word-count topology of ``benchmarks/wordcount.py`` (acking on, ``local[2]``, defaults
otherwise) with ``sparkstorm.superstep.hops`` at 0 (every tuple waits for the next
superstep) and at 16 (the default), in interleaved rounds after the same warm-up. Per run:
tuples/s, supersteps, the spout batch the sizer settled on, complete latency p50/p99,
and the Python workers' decode and encode seconds (summed over both workers).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from benchmarks.wordcount import warmed_session
from examples.word_count import build, generated_sentences
from sparkstorm import Config, run

HOPS = 16
HEADER = "hops | tuples/s | supersteps | spout batch | p50 ms | p99 ms | decode s | encode s"


def compare(spark: Any, sentences: list[str], rounds: int) -> list[str]:
    """One table row per run: hops 0 and the default, interleaved ``rounds`` times."""
    lines = [HEADER]
    for _ in range(rounds):
        for hops in (0, HOPS):
            topology, conf = build(sentences)
            conf[Config.SPARKSTORM_SUPERSTEP_HOPS] = hops
            conf[Config.SPARKSTORM_SPARK_MODE] = "superstep"
            result = run(topology, conf, engine="spark", spark=spark)
            stats, profile = result.stats, result.profile
            assert stats["sentences"]["acked"] == len(sentences), stats["sentences"]
            tuples = stats["split"]["executed"] + stats["count"]["executed"]
            spout = stats["sentences"]
            lines.append(
                f"{hops:>4} | {tuples / result.elapsed_secs:>8,.0f} | {result.supersteps:>10} | "
                f"{spout['spout_batch']:>11,} | {spout['complete_latency_p50_ms']:>6.0f} | "
                f"{spout['complete_latency_p99_ms']:>6.0f} | {profile.get('decode', 0):>8.2f} | "
                f"{profile.get('encode', 0):>8.2f}"
            )
            print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark, _ = warmed_session()
    print(HEADER)
    compare(spark, generated_sentences(args.sentences), args.rounds)
    spark.stop()


if __name__ == "__main__":
    main()
