"""The acker's memory per pending tuple tree and its throughput, in one acker task.

    python -m benchmarks.acker [--trees N] [--save]

Memory: N trees are initialised (pending), then the acker's heap growth (tracemalloc)
and its state snapshot (what the Spark engine ships between supersteps) are divided by
N. Throughput: N acks through the task runner, each completing one tree, delivered as
the collectors send them (one ``__ack_ack`` batch per bolt task and superstep; here
batches of 1,000 roots, the word count's spout batch on the local engine), per second,
outcomes to the spouts included. Targets (issue "Benchmarks"): at most 48
bytes per tree, at least 2,000,000 acks per second per task.

The Arrow word count's stream (issue 68): per 4,096-sentence batch, the spout's init,
the two split tasks' acks and the two count tasks' acks (combined per root as a bolt
sends them), one task run per batch; trees completed a second, with the roots random
(the tuple path's) and consecutive (an Arrow spout's: a base and the row number).
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

import numpy as np

from benchmarks.report import report
from sparkstorm import Config, Fields, TopologyBuilder
from sparkstorm.config import resolve
from sparkstorm.reliability.ids import consecutive_base, id_source, ids_of
from sparkstorm.reliability.pending_trees import xor_by_root
from sparkstorm.tasks.task_runner import BoltTask
from sparkstorm.tasks.task_state import snapshot
from sparkstorm.testing import FeederSpout
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.streams import (
    ACKER_ACK_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    FIELDS_BY_STREAM,
)
from sparkstorm.topology.tuple import Tuple
from tests.scenarios.bolts import Ack

SPOUT_TASK = 1
INIT_BATCH = 100_000
ACK_BATCH = 1_000
SUPERSTEP = 100  # messages per task.run call, as a superstep delivers several batches


def acker_task() -> BoltTask:
    builder = TopologyBuilder()
    builder.set_spout("s", FeederSpout(Fields("x")))
    builder.set_bolt("b", Ack()).shuffle_grouping("s")
    plan = Plan(builder.create_topology(), resolve(Config()))
    task = BoltTask(plan, plan.acker_tasks[0], seed=0)
    task.prepare()
    return task


def batches(stream: str, roots: np.ndarray, vals: np.ndarray, size: int, *extra: int) -> list:
    fields = FIELDS_BY_STREAM[stream]
    return [
        Tuple([roots[i : i + size], vals[i : i + size], *extra], fields, "b", stream, 2)
        for i in range(0, len(roots), size)
    ]


def pending_trees(trees: int) -> tuple[BoltTask, np.ndarray, np.ndarray, float]:
    """An acker task holding ``trees`` pending trees, and its heap growth per tree."""
    rng = np.random.default_rng(1)
    roots = rng.integers(0, 2**64 - 1, trees, np.uint64, endpoint=True)
    vals = rng.integers(1, 2**64 - 1, trees, np.uint64, endpoint=True)
    task = acker_task()
    inits = batches(ACKER_INIT_STREAM_ID, roots, vals, INIT_BATCH, SPOUT_TASK)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i, message in enumerate(inits):
        task.run([message], i, 0.0, [])
    gc.collect()
    heap = (tracemalloc.get_traced_memory()[0] - before) / trees
    tracemalloc.stop()
    return task, roots, vals, heap


def ack_rate(task: BoltTask, messages: list[Tuple], trees: int) -> float:
    out: list = []
    started = time.perf_counter()
    for i in range(0, len(messages), SUPERSTEP):
        task.run(messages[i : i + SUPERSTEP], 1000 + i, 1.0, out)
    rate = trees / (time.perf_counter() - started)
    assert sum(len(tup.values[0]) for _, tup in out) == trees  # one outcome per tree
    return rate


def measure(trees: int) -> list[str]:
    """The acker's table: bytes per pending tree, acks per second."""
    task, roots, vals, heap = pending_trees(trees)
    snap = len(snapshot(task)) / trees
    rate = ack_rate(task, batches(ACKER_ACK_STREAM_ID, roots, vals, ACK_BATCH), trees)
    return [
        f"acker, {trees:,} pending trees in one task",
        f"  memory per pending tree:   {heap:7.1f} bytes in the heap (target <= 48)",
        f"  snapshot per pending tree: {snap:7.1f} bytes (target <= 48)",
        f"  throughput: {rate:,.0f} acks/s per task, batched as the collectors send "
        f"them ({ACK_BATCH:,} a message) (target >= 2,000,000)",
    ]


ARROW_BATCH = 4096
WORDS = 8


def word_count_stream(sentences: int, consecutive: bool) -> list[list[Tuple]]:
    """The acker's messages of the Arrow word count, a list a spout batch."""
    draw = id_source(7, 0, 1)
    runs = []
    for _ in range(0, sentences, ARROW_BATCH):
        if consecutive:
            base = consecutive_base(draw(), ARROW_BATCH)
            roots = np.arange(ARROW_BATCH, dtype=np.uint64) + np.uint64(base)
        else:
            roots = ids_of(draw, ARROW_BATCH)
        to_split = ids_of(draw, ARROW_BATCH)
        words = ids_of(draw, ARROW_BATCH * WORDS).reshape(ARROW_BATCH, WORDS)
        split_acks = to_split ^ np.bitwise_xor.reduce(words, axis=1)
        halves = np.arange(ARROW_BATCH) % 2 == 0  # two split tasks
        counted = (words % np.uint64(2)).astype(bool).ravel()  # two count tasks
        run = batches(ACKER_INIT_STREAM_ID, roots, to_split, ARROW_BATCH, SPOUT_TASK)
        for half in (halves, ~halves):
            run += batches(ACKER_ACK_STREAM_ID, roots[half], split_acks[half], ARROW_BATCH)
        for task in (counted, ~counted):
            acked = xor_by_root(np.repeat(roots, WORDS)[task], words.ravel()[task])
            run += batches(ACKER_ACK_STREAM_ID, *acked, ARROW_BATCH * WORDS)
        runs.append(run)
    return runs


def stream_rate(sentences: int, consecutive: bool) -> float:
    """Trees the acker completes a second on the Arrow word count's stream."""
    task, out = acker_task(), []
    runs = word_count_stream(sentences, consecutive)
    started = time.perf_counter()
    for i, run in enumerate(runs):
        task.run(run, i, 1.0, out)
    rate = len(runs) * ARROW_BATCH / (time.perf_counter() - started)
    assert sum(len(tup.values[0]) for _, tup in out) == len(runs) * ARROW_BATCH
    return rate


def measure_stream(sentences: int) -> list[str]:
    random, consecutive = (stream_rate(sentences, c) for c in (False, True))
    return [
        f"acker on the Arrow word count's stream, {sentences:,} sentences, one task",
        f"  random roots (the tuple path's):      {random:,.0f} trees/s",
        f"  consecutive roots (an Arrow spout's): {consecutive:,.0f} trees/s",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trees", type=int, default=1_000_000)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    report("acker", measure(args.trees) + measure_stream(200_704), args.save)


if __name__ == "__main__":
    main()
