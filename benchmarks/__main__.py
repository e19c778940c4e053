"""Every benchmark in one process run, and with ``--save`` the docs regenerated from it.

    python -m benchmarks [--save] [--sentences N] [--rounds R] [--sizes A,B,C] [--trees N]
                         [--rates A,B,C] [--secs S]

Runs, on one warmed-up Spark ``local[2]`` session: the word-count comparison (local and
Spark engines, acking on and off, Structured Streaming, plain PySpark), the scaling
sweep (3 sizes, 1/2/4 tasks per bolt, with the profile breakdown), the latency run
(steady offered rates, both engines) and the acker's memory and throughput. With
``--save`` it writes docs/benchmarks/{wordcount,scaling,latency,acker}.txt, the plots
docs/benchmarks/{scaling,latency}.png, and the results section of docs/benchmarks.md.
The whole run takes about 25 minutes on a 2-core machine with the defaults.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from benchmarks import acker, latency, scaling, wordcount
from benchmarks.report import DOCS, report, write_results_section
from examples.word_count import generated_sentences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sizes", default=",".join(map(str, scaling.SIZES)))
    parser.add_argument("--trees", type=int, default=1_000_000)
    parser.add_argument("--rates", default=",".join(map(str, latency.RATES)))
    parser.add_argument("--secs", type=float, default=40.0, help="per latency run")
    parser.add_argument("--save", action="store_true", help="write docs/benchmarks*")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    started = time.perf_counter()
    spark, session_secs = wordcount.warmed_session()
    sentences = generated_sentences(args.sentences)
    tables = {"wordcount": wordcount.compare(spark, sentences, args.rounds, session_secs)}
    tables["scaling"], points = scaling.measure(spark, [int(s) for s in args.sizes.split(",")])
    rates = [int(rate) for rate in args.rates.split(",")]
    tables["latency"], steady = latency.measure(spark, rates, args.secs)
    spark.stop()
    tables["acker"] = acker.measure(args.trees)
    for name, lines in tables.items():
        report(name, lines, args.save)
        print()
    if args.save:
        scaling.plot(points, DOCS / "scaling.png")
        latency.plot(steady, DOCS / "latency.png")
        write_results_section(tables)
    print(f"all benchmarks: {time.perf_counter() - started:.0f}s")


if __name__ == "__main__":
    main()
