"""Backpressure: a bolt ten times slower than its spout, memory sampled over the run.

    python -m benchmarks.backpressure [--secs 120] [--modes continuous,spark,local]

A spout that could emit as fast as it is asked feeds a bolt that spends ten times the
spout's time per tuple (a busy wait), acking on, default configuration: no
``topology.max.spout.pending``. What keeps memory bounded is the engine itself: in the
continuous mode a worker stops asking its spouts while its backlog is over
``MAX_BACKLOG`` tuples and stops reading its socket, so peers' frames wait in ZeroMQ's
high-water marks. ``continuous-arrow`` runs the same pair in columns (batches of 1,000
rows, every row a tracked message): the backlog counts rows, not batches. The table
gives the resident memory of the whole process tree (driver, JVM, Python workers) every
10 s, its growth from the first sample after 20 s to
the last, and what was acked and failed: flat memory and nothing failed is the target.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Any

from benchmarks.modes import engine_for
from benchmarks.report import report
from benchmarks.rss import _tree_rss_bytes
from sparkstorm import Bolt, Config, Fields, Spout, TopologyBuilder, run
from sparkstorm.arrow import ArrowBolt, ArrowSpout

SPOUT_SECS = 20e-6
"""What the spout spends per tuple (a busy wait): about 50,000 tuples/s at most."""
SLOWDOWN = 10


def _spin(secs: float) -> None:
    until = time.perf_counter() + secs
    while time.perf_counter() < until:
        pass


class FastSpout(Spout):
    """Emits a tracked 100-byte payload on every call; replays what fails."""

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.next = 0
        self.replays: list[int] = []

    def next_tuple(self) -> None:
        _spin(SPOUT_SECS)
        if self.replays:
            number = self.replays.pop()
        else:
            number, self.next = self.next, self.next + 1
        self.collector.emit([number, "x" * 100], msg_id=number)

    def fail(self, msg_id: Any, reason: Any = None) -> None:
        self.replays.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("number", "payload"))


class SlowBolt(Bolt):
    """Spends ten times the spout's time on each tuple, then acks it."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        _spin(SPOUT_SECS * SLOWDOWN)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


BATCH_ROWS = 1000
"""Rows an Arrow spout's batch holds."""


class FastBatches(ArrowSpout):
    """``FastSpout`` in columns: a batch of tracked rows a call, each row's time spent."""

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        import pyarrow as pa

        self.pa, self.collector = pa, collector
        self.next = 0
        self.replays: list[int] = []
        self.payload = pa.array(["x" * 100] * BATCH_ROWS)

    def next_batch(self) -> None:
        _spin(SPOUT_SECS * BATCH_ROWS)
        ids = self.replays[:BATCH_ROWS]
        self.replays = self.replays[BATCH_ROWS:]
        fresh = BATCH_ROWS - len(ids)
        ids += range(self.next, self.next + fresh)
        self.next += fresh
        numbers = self.pa.array(ids, self.pa.int64())
        batch = self.pa.record_batch([numbers, self.payload], names=["number", "payload"])
        self.collector.emit_batch(batch, ids)

    def fail(self, msg_id: Any, reason: Any = None) -> None:
        self.replays.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("number", "payload"))


class SlowRows(ArrowBolt):
    """Spends ten times the spout's time on each row of a batch, then acks them."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute_batch(self, batch: Any) -> None:
        _spin(SPOUT_SECS * SLOWDOWN * batch.num_rows)
        self.collector.ack_batch(batch)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def measure(spark: Any, mode: str, secs: float) -> dict[str, Any]:
    """One run of ``secs`` seconds: RSS samples every 10 s, acked and failed.

    ``mode`` ending in ``-arrow``: the same pair in columns (rows are messages).
    """
    builder = TopologyBuilder()
    columns = mode.endswith("-arrow")
    mode = mode.removesuffix("-arrow")
    builder.set_spout("fast", FastBatches() if columns else FastSpout())
    builder.set_bolt("slow", SlowRows() if columns else SlowBolt()).shuffle_grouping("fast")
    conf = Config()
    engine = engine_for(mode, conf)
    samples: list[tuple[float, int]] = []
    stop = threading.Event()
    started = time.monotonic()

    def sample() -> None:
        while not stop.wait(10.0):
            samples.append((time.monotonic() - started, _tree_rss_bytes(os.getpid())))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    result = run(
        builder.create_topology(),
        conf,
        engine=engine,
        spark=spark if engine == "spark" else None,
        duration=secs,
    )
    stop.set()
    sampler.join()
    spout = result.stats["fast"]
    return {"samples": samples, "acked": spout["acked"], "failed": spout["failed"]}


def table(runs: dict[str, dict[str, Any]], secs: float) -> list[str]:
    """The RSS samples and the growth after the first 20 s, per mode."""
    lines = [
        f"a bolt {SLOWDOWN}x slower than its spout for {secs:g}s, acking on, no max spout "
        "pending: RSS of the whole process tree (MiB) every 10 s",
    ]
    for mode, r in runs.items():
        mib = [rss / 2**20 for _, rss in r["samples"]]
        later = [rss / 2**20 for t, rss in r["samples"] if t >= 20]
        growth = later[-1] - later[0] if len(later) > 1 else 0.0
        lines.append(
            f"{mode:<11} {' '.join(f'{m:.0f}' for m in mib)}  growth after 20 s: "
            f"{growth:+.0f} MiB; acked {r['acked']:,}, failed {r['failed']:,}"
        )
    return lines


def main() -> None:
    from benchmarks.wordcount import warmed_session

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--secs", type=float, default=120.0)
    parser.add_argument(
        "--modes", default="continuous,continuous-arrow", help="add -arrow for the columnar pair"
    )
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark, _ = warmed_session()
    runs = {mode: measure(spark, mode, args.secs) for mode in args.modes.split(",")}
    spark.stop()
    report("backpressure", table(runs, args.secs), args.save)


if __name__ == "__main__":
    main()
