"""The continuous mode's scaling model, checked on a ``local-cluster``: one executor, then two.

    python -m benchmarks.cluster_scaling [--sentences N] [--rounds R] [--save]

The model (docs/architecture.md, "Scaling model"): a worker's tuples cost a fixed amount
of CPU each, wherever it runs, and the driver's share does not grow with the rate; so
with a core per worker, throughput grows with the workers. Here the word count (acking
on, one acker) runs in the continuous mode on Spark standalone's ``local-cluster``
master (executors are separate JVMs, each with its own Python worker, as on a cluster):
with one executor of one core (one worker), then two (two workers), and ``local[2]`` for
reference. Each master runs in a subprocess of its own (a process holds one
SparkContext), warmed up before it is timed; rounds interleave the masters and the table
gives medians. Reported: tuples/s, its ratio to one executor against the model's 2x, the
workers' CPU per tuple (the model's premise: constant), and the driver's share of the
run's CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.report import report

MASTERS = ["local-cluster[1,1,1024]", "local-cluster[2,1,1024]", "local[2]"]
WORKERS = {"local-cluster[1,1,1024]": 1, "local-cluster[2,1,1024]": 2, "local[2]": 2}


def one(master: str, sentences: int) -> dict[str, Any]:
    """In this process: a session on ``master``, a warm-up, one timed word count."""
    from benchmarks.wordcount import sparkstorm_run
    from examples.word_count import generated_sentences
    from sparkstorm.engines.spark import create_session

    started = time.perf_counter()
    root = str(Path(__file__).resolve().parents[1])  # the examples' module, in executors too
    settings = {"spark.executor.memory": "900m", "spark.executorEnv.PYTHONPATH": root}
    spark = create_session(master, settings, ui=False)
    spark.sparkContext.setLogLevel("ERROR")
    executors = WORKERS[master] if master.startswith("local-cluster") else 0
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus  # driver included
    while status().size() < executors + 1:
        time.sleep(0.2)
    startup = time.perf_counter() - started
    sparkstorm_run(spark, "continuous", 1, generated_sentences(20_000, seed=1))  # warm up
    result = sparkstorm_run(spark, "continuous", 1, generated_sentences(sentences))
    spark.stop()
    cpu = result["cpu"]
    tuples = result["tps"] * result["elapsed"]
    return {
        "tps": result["tps"],
        "startup": startup,
        "worker_us": 1e6 * cpu["workers"] / tuples,
        "jvm_us": 1e6 * cpu["jvm"] / tuples,
        "driver_share": result["driver_share"],
    }


def measure(sentences: int, rounds: int) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in MASTERS}
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    for _ in range(rounds):
        for master in MASTERS:
            command = [sys.executable, "-m", "benchmarks.cluster_scaling", "--one", master]
            command += ["--sentences", str(sentences)]
            done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
            if done.returncode != 0:
                msg = f"{master}: {done.stderr[-3000:]}"
                raise RuntimeError(msg)
            runs[master].append(json.loads(done.stdout.strip().splitlines()[-1]))
    return runs


def table(runs: dict[str, list[dict[str, Any]]], sentences: int, rounds: int) -> list[str]:
    def med(master: str, key: str) -> float:
        return float(statistics.median(r[key] for r in runs[master]))

    one_executor = med(MASTERS[0], "tps")
    lines = [
        f"The continuous mode's word count ({sentences:,} sentences, acking on) on "
        f"local-cluster, medians of {rounds} rounds",
        "",
        f"{'master':<25}{'workers':>8}{'tuples/s':>11}{'vs 1':>7}{'model':>7}"
        f"{'worker us/t':>12}{'JVM us/t':>10}{'driver':>8}{'start s':>9}",
    ]
    for master in MASTERS:
        workers = WORKERS[master]
        tps = med(master, "tps")
        lines.append(
            f"{master:<25}{workers:>8}{tps:>11,.0f}{tps / one_executor:>7.2f}{workers:>7.2f}"
            f"{med(master, 'worker_us'):>12.2f}{med(master, 'jvm_us'):>10.2f}"
            f"{100 * med(master, 'driver_share'):>7.1f}%{med(master, 'startup'):>9.1f}"
        )
    lines += [
        "",
        "vs 1: throughput against one executor; model: what the scaling model predicts "
        "(a core per worker). worker us/t: CPU of the Python workers per tuple; JVM us/t: "
        "of every JVM (driver's and executors'); driver: the driver process's share of the "
        "run's CPU. This machine has 2 cores for everything: the driver, the JVMs and the "
        "workers.",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.sentences)))
        return
    runs = measure(args.sentences, args.rounds)
    report("cluster_scaling", table(runs, args.sentences, args.rounds), args.save)


if __name__ == "__main__":
    main()
