"""The acker's memory per pending tuple tree and its throughput, in one acker task.

    python -m benchmarks.acker [--trees N] [--save]

Memory: N trees are initialised (pending), then the acker's heap growth (tracemalloc)
and its state snapshot (what the Spark engine ships between supersteps) are divided by
N. Throughput: ack messages through the task runner, as an engine delivers them, per
second. Targets (issue "Benchmarks"): at most 48 bytes per tree, at least 2,000,000
acks per second per task.
"""

from __future__ import annotations

import argparse
import gc
import random
import time
import tracemalloc

from benchmarks.report import report
from sparkstorm import Config, Fields, TopologyBuilder
from sparkstorm.config import resolve
from sparkstorm.reliability.streams import (
    ACKER_ACK_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    FIELDS_BY_STREAM,
)
from sparkstorm.runtime.task_runner import BoltTask
from sparkstorm.runtime.task_state import snapshot
from sparkstorm.testing import FeederSpout
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.tuple import Tuple
from tests.scenarios.bolts import Ack

BATCH = 100_000


def acker_task() -> BoltTask:
    builder = TopologyBuilder()
    builder.set_spout("s", FeederSpout(Fields("x")))
    builder.set_bolt("b", Ack()).shuffle_grouping("s")
    plan = Plan(builder.create_topology(), resolve(Config()))
    task = BoltTask(plan, plan.acker_tasks[0], seed=0)
    task.prepare()
    return task


def messages(stream: str, rows: list[list[int]]) -> list[Tuple]:
    fields = FIELDS_BY_STREAM[stream]
    return [Tuple(values, fields, "b", stream, 2) for values in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trees", type=int, default=1_000_000)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    rng = random.Random(1)
    roots = [rng.getrandbits(64) for _ in range(args.trees)]
    vals = [rng.getrandbits(64) for _ in range(args.trees)]
    task = acker_task()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(0, args.trees, BATCH):
        batch = messages(
            ACKER_INIT_STREAM_ID,
            [[r, v, 1] for r, v in zip(roots[i : i + BATCH], vals[i : i + BATCH], strict=True)],
        )
        task.run(batch, 1, 0.0, [])
        del batch
    gc.collect()
    heap = (tracemalloc.get_traced_memory()[0] - before) / args.trees
    tracemalloc.stop()
    snap = len(snapshot(task)) / args.trees
    acks = messages(ACKER_ACK_STREAM_ID, [[r, v] for r, v in zip(roots, vals, strict=True)])
    out: list = []
    started = time.perf_counter()
    for i in range(0, len(acks), BATCH):
        task.run(acks[i : i + BATCH], 2, 1.0, out)
    rate = len(acks) / (time.perf_counter() - started)
    assert sum(len(tup.values[0]) for _, tup in out) == args.trees  # one outcome per tree
    lines = [
        f"acker, {args.trees:,} pending trees in one task",
        f"  memory per pending tree:   {heap:7.1f} bytes in the heap (target <= 48)",
        f"  snapshot per pending tree: {snap:7.1f} bytes (target <= 48)",
        f"  throughput: {rate:,.0f} ack messages/s per task (target >= 2,000,000)",
    ]
    report("acker", lines, args.save)


if __name__ == "__main__":
    main()
