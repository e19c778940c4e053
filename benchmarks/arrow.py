"""Columns: the Arrow word count, every sentence a tracked message, beside Spark's columns.

    python -m benchmarks.arrow [--sentences N [N ...]] [--warm W] [--rounds R]
                               [--rate ROWS] [--secs S] [--save]

The same seeded sentences (8 words from a 5,000-word vocabulary), at each size given
(200,000 and 2,000,000 by default), for each row, each row in a process of its own
(``benchmarks/arrow_side.py``) that first runs ``--warm`` untimed rounds of the same
work, then ``--rounds`` timed ones (the table gives their median):

- ``examples/arrow_word_count.py`` (an Arrow spout, a pyarrow split anchoring every word
  to its sentence, a pyarrow count; each sentence one message, acked once its words are
  counted) on the continuous mode and on the local engine, and on the continuous mode
  with no acker (nothing tracked: what the engine costs without Storm's reliability);
  and on the continuous mode with the spout a user writes first, which holds the
  sentences as a Python list and makes each batch's Arrow array as it emits it;
- the fastest PySpark a Spark user would write for it: ``createDataFrame`` of the
  sentences, the same pyarrow split in ``mapInArrow``, ``groupBy().count()`` in the JVM,
  no ``repartition``, nothing tracked;
- Structured Streaming with that split, at its steady rate (first micro-batch apart);
- the one-process columnar floor: the split and pyarrow value counts over 4,096-row
  batches in a plain loop, no engine, no acking, one core.

Each row is timed twice: **the whole job**, as a user times it (for the engine rows,
from building the topology, whose spout takes the sentences, to ``run`` returning: the
topology's start-up, its run, and the idle grace and the stop after it; for PySpark,
from ``createDataFrame`` to ``collect`` returning), and at its **steady rate** (the
engine rows over ``RunResult.elapsed_secs``; Structured Streaming after its first
micro-batch), labelled as such. Spark's session start-up is apart on both sides (one
session, shared as a Spark user shares it). Throughput counts sentences split plus
words counted. Peak RSS is the row's whole process tree (its Python
process, Spark's JVM, the Python workers), sampled every 0.2 s from start to end.

The latency line: the continuous mode offered ``--rate`` rows a second for ``--secs``
seconds, three times after a warm run (``benchmarks/arrow_latency.py``), each message's
complete latency from its emit to its ack; the medians of the runs, and their p99s'
range.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import Any

from benchmarks.report import report
from benchmarks.rss import PeakRss
from examples import arrow_word_count

ROWS = {
    "continuous": "arrow, continuous",
    "list": "arrow, continuous, spout holds a list",
    "untracked": "arrow, continuous, nothing tracked",
    "local": "arrow, local engine",
    "pyspark": "PySpark (pyarrow split, JVM count)",
    "streaming": "Structured Streaming (same split)",
    "floor": "columnar floor (1 process, no engine)",
}


PHASES = {
    "built": "building the topology",
    "startup": "start-up",
    "elapsed": "the run",
    "after": "after it (the idle grace, the stop)",
}
"""An engine row's whole job, part by part (seconds, medians)."""


def in_own_process(*args: str) -> tuple[list[dict[str, float]], int]:
    """``benchmarks.arrow_side`` with ``args``: its rounds, and its tree's peak RSS."""
    command = [sys.executable, "-m", "benchmarks.arrow_side", *args]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    with PeakRss(0.2, child.pid) as rss:
        out, _ = child.communicate()
    if child.returncode:
        msg = f"{' '.join(command)} exited {child.returncode}"
        raise SystemExit(msg)
    return json.loads(out.splitlines()[-1])["rounds"], rss.peak


def table(count: int, warm: int, rounds: int) -> list[str]:
    """The rows at ``count`` sentences: median tuples/s, ratios, peak RSS."""
    runs: dict[str, tuple[list[dict[str, float]], int]] = {}
    for row in ROWS:
        runs[row] = in_own_process(row, str(count), str(warm), str(rounds))
        print(f"{count:,} {row}: {[round(r['tps']) for r in runs[row][0]]}", flush=True)

    def median_of(key: str) -> dict[str, float]:
        return {row: statistics.median(r[key] for r in timed) for row, (timed, _) in runs.items()}

    median, whole = median_of("tps"), median_of("whole")
    base, ss, floor = median["pyspark"], median["streaming"], median["floor"]
    lines = [
        f"{count:,} sentences x 8 words; each row in its own process, {warm} warm rounds "
        f"then {rounds} timed (median)",
        f"{'':<40}{'the whole job':>23}{'steady rate (labelled)':>32}",
        f"{'row':<40}{'tuples/s':>12}{'x PySpark':>11}{'tuples/s':>12}{'x PySpark':>11}"
        f"{'x SS':>7}{'x floor':>9}{'RSS MiB':>9}",
    ]
    for row, label in ROWS.items():
        tps, peak = median[row], runs[row][1]
        lines.append(
            f"{label:<40}{whole[row]:>12,.0f}{whole[row] / whole['pyspark']:11.2f}"
            f"{tps:>12,.0f}{tps / base:11.2f}{tps / ss:7.2f}{tps / floor:9.2f}"
            f"{peak / 2**20:9,.0f}"
        )
    for row in ("continuous", "list", "local"):
        parts = {key: statistics.median(r[key] for r in runs[row][0]) for key in PHASES}
        lines.append(
            f"{ROWS[row]}: the whole job {sum(parts.values()):.2f} s = "
            + ", ".join(f"{PHASES[key]} {secs:.2f}" for key, secs in parts.items())
        )
    p99 = statistics.median(r["p99"] for r in runs["continuous"][0])
    lines.append(
        f"arrow, continuous: complete latency p99 {p99:,.0f} ms on this flood (every "
        f"sentence a message; batches of {arrow_word_count.BATCH_ROWS:,} rows, "
        f"{8 * arrow_word_count.BATCH_ROWS:,} pending at most)"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, nargs="+", default=[200_000, 2_000_000])
    parser.add_argument("--warm", type=int, default=3, help="untimed rounds first")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds")
    parser.add_argument("--rate", type=float, default=1_000_000, help="rows/s offered")
    parser.add_argument("--secs", type=float, default=10)
    parser.add_argument("--save", action="store_true", help="write docs/benchmarks/arrow.txt")
    args = parser.parse_args()
    lines: list[str] = []
    for count in args.sentences:
        lines += table(count, args.warm, args.rounds)
    steady: Any = in_own_process("latency", str(args.rate), str(args.secs), "2")[0]
    p50, p99 = ([r[key] for r in steady] for key in ("p50", "p99"))
    lines += [
        f"complete latency, continuous, {args.rate:,.0f} rows/s offered for {args.secs:g}s "
        f"({args.rate / 9:,.0f} sentences/s), median of {len(steady)} runs: p50 "
        f"{statistics.median(p50):.1f} ms, p99 {statistics.median(p99):.1f} ms (p99 "
        f"{min(p99):.1f}-{max(p99):.1f}; {statistics.median(r['achieved'] for r in steady):,.0f} "
        f"rows/s achieved, {steady[0]['acked']:,.0f} messages acked a run)",
        "PySpark: createDataFrame of the sentences, mapInArrow(the pyarrow split),",
        "groupBy('word').count().collect(), no repartition; Structured Streaming: file",
        "source, the same split, streaming groupBy().count() to the noop sink",
        "(benchmarks/streaming.py); floor: the split and value counts in a plain loop",
    ]
    report("arrow", lines, args.save)


if __name__ == "__main__":
    main()
