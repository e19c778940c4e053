"""Where the Spark engine's CPU goes: driver, JVM and Python workers, run after run.

    python -m benchmarks.cpu_budget [--sentences N] [--runs R]

Runs the word count (defaults, acking on) ``--runs`` times on one ``local[2]`` session,
started cold on purpose, and prints for each run the tuples/s and the CPU seconds of
the driver's Python process, the Spark JVM and the Python workers (from ``/proc``, so
every thread counts: the JIT compiler, garbage collectors, the job thread). On one
machine all three share the cores, so their sum per tuple is what caps throughput.
The JVM's share per superstep falls over the first runs as its JIT warms up; see
docs/architecture.md, "Where a Spark superstep's CPU goes".
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from benchmarks.hog import HOG_MARK
from benchmarks.rss import process_tree
from examples.word_count import build, generated_sentences
from sparkstorm import Config, run

CpuSnapshot = dict[int, tuple[str, float]]
"""pid -> (driver, jvm or workers; CPU seconds so far, its reaped children's included)."""


def cpu_snapshot() -> CpuSnapshot:
    """CPU seconds (user + system) of this process, the JVM and the other children, per pid.

    A process's own time, and its children's that it has reaped (a Spark Python worker
    that ended: its time is in the daemon's that forked it), so that a process that
    came and went between two readings still counts. The CPU hog (``benchmarks.hog``)
    does not.
    """
    tick = os.sysconf("SC_CLK_TCK")
    me = os.getpid()
    out: CpuSnapshot = {}
    for pid, stat in process_tree(me).items():
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if HOG_MARK.encode() in command:
            continue
        own = int(stat[11]) + int(stat[12])  # utime, stime
        reaped = 0 if pid == me else int(stat[13]) + int(stat[14])  # cutime, cstime
        kind = "driver" if pid == me else "jvm" if b"java" in command else "workers"
        out[pid] = (kind, (own + reaped) / tick)
    return out


def cpu_used(before: CpuSnapshot, after: CpuSnapshot) -> dict[str, float]:
    """CPU seconds used between two snapshots, by kind, process by process.

    A process that left the tree in between (a Python worker whose daemon ended, now
    a child of init) is not subtracted: summing each side and subtracting would count
    its whole past as negative time (a run once measured -0.3 µs a tuple that way).
    """
    used = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
    for pid, (kind, secs) in after.items():
        was = before.get(pid)
        used[kind] += secs - (was[1] if was is not None and was[0] == kind else 0.0)
    return used


def cpu_secs() -> dict[str, float]:
    """CPU seconds so far of the driver, the JVM and the workers (see :func:`cpu_snapshot`)."""
    return cpu_used({}, cpu_snapshot())


def main() -> None:
    from sparkstorm.engines.spark import create_session

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=4)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = create_session("local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    tuples = args.sentences * 9
    print(
        f"{'run':>3}{'tuples/s':>10}{'steps':>7}{'driver s':>10}{'JVM s':>8}"
        f"{'workers s':>11}{'JVM s/step':>12}{'CPU us/tuple':>14}"
    )
    for i in range(1, args.runs + 1):
        topology, conf = build(generated_sentences(args.sentences))
        before, started = cpu_snapshot(), time.perf_counter()
        conf[Config.SPARKSTORM_SPARK_MODE] = "superstep"  # what this budget is of
        result = run(topology, conf, engine="spark", spark=spark)
        elapsed, after = time.perf_counter() - started, cpu_snapshot()
        used = cpu_used(before, after)
        print(
            f"{i:>3}{tuples / elapsed:>10,.0f}{result.supersteps:>7}{used['driver']:>10.1f}"
            f"{used['jvm']:>8.1f}{used['workers']:>11.1f}"
            f"{used['jvm'] / result.supersteps:>12.2f}{sum(used.values()) / tuples * 1e6:>14.1f}"
        )
    spark.stop()


if __name__ == "__main__":
    main()
