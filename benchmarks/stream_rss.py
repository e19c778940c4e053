"""Resident memory of an example that runs as a stream, sampled while it runs.

    python -m benchmarks.stream_rss --secs 300 [--baseline /path/to/older/clone]

``sparkstorm run examples/sliding_window.py`` (the default continuous mode, ``local[2]``)
runs for ``--secs``; every 5 s the driver's own RSS, the Python workers' (Spark's
``pyspark.daemon`` processes and their forks) and the JVM's are read from ``/proc``. A
stream's memory must be flat after warm-up: the table gives each at the first sample
after ``--warmup`` seconds and at the end, and the growth per hour from a straight line
fitted over that span. With ``--baseline``, the same run of an older clone's code and
example goes first, in the same invocation, for a before/after side by side.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.rss import process_tree

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_SECS = 5.0


def _kind(stat: list[str], cmdline: str) -> str:
    if "java" in cmdline.split(" ", 1)[0]:
        return "jvm"
    return "workers" if "pyspark" in cmdline else "driver"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def sample(root: int) -> dict[str, float]:
    """MB of RSS by kind (driver, workers, jvm) for ``root``'s process tree."""
    page = os.sysconf("SC_PAGE_SIZE")
    mb: dict[str, float] = {"driver": 0.0, "workers": 0.0, "jvm": 0.0}
    for pid, stat in process_tree(root).items():
        mb[_kind(stat, _cmdline(pid))] += int(stat[21]) * page / 1e6
    return mb


def run(tree: Path, example: str, secs: float) -> list[tuple[float, dict[str, float]]]:
    """Run ``example`` from ``tree`` for ``secs``; the RSS samples (seconds since start)."""
    command = [
        sys.executable, "-m", "sparkstorm.cli", "run", example, "--duration", str(secs),
        "--quiet", "--no-ui", "--no-spark-ui", "--master", "local[2]",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tree)}
    process = subprocess.Popen(
        command, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    started, samples = time.monotonic(), []
    while process.poll() is None:
        samples.append((time.monotonic() - started, sample(process.pid)))
        time.sleep(SAMPLE_SECS)
    if process.returncode not in (0, 1):  # 1: a stream stopped with shutdown failures is fine
        msg = f"{' '.join(command)} in {tree} exited {process.returncode}"
        raise SystemExit(msg)
    return samples


def growth_per_hour(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of (seconds, MB), in MB an hour."""
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points) or 1.0
    return 3600 * sum((t - mean_t) * (v - mean_v) for t, v in points) / var


def table(label: str, samples: list[tuple[float, dict[str, float]]], warmup: float) -> list[str]:
    """One row per kind: RSS after warm-up, at the end, the change and the hourly growth."""
    steady = [(t, s) for t, s in samples if t >= warmup][:-1]  # the last: a process leaving
    if len(steady) < 3:
        return [f"{label}: too short a run to read after {warmup:g} s of warm-up"]
    lines = []
    for kind in ("driver", "workers", "jvm"):
        first, last = steady[0][1][kind], steady[-1][1][kind]
        slope = growth_per_hour([(t, s[kind]) for t, s in steady])
        change = 100 * (last - first) / first if first else 0.0
        lines.append(
            f"{label:<10} {kind:<8} {first:>9.0f} {last:>9.0f} {change:>+8.1f}% {slope:>+10.0f}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--secs", type=float, default=300)
    parser.add_argument("--warmup", type=float, default=60)
    parser.add_argument("--example", default="examples/sliding_window.py")
    parser.add_argument("--baseline", type=Path, help="an older clone, run first")
    args = parser.parse_args()
    trees = ([("baseline", args.baseline)] if args.baseline else []) + [("this", ROOT)]
    lines = [
        f"{args.example}, continuous mode, local[2], {args.secs:g} s; RSS in MB after "
        f"{args.warmup:g} s of warm-up and at the end",
        f"{'code':<10} {'process':<8} {'warm':>9} {'end':>9} {'change':>9} {'MB/hour':>10}",
    ]
    for label, tree in trees:
        lines += table(label, run(tree, args.example, args.secs), args.warmup)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
