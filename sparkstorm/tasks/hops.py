"""One worker's share of a superstep, in hops: tuples between its own tasks go on at once.

Both engines deal bolt and acker tasks over workers (``Plan.deal``: Spark partitions; the
local engine mirrors Spark's deal so that both deliver in the same order). Within a
superstep a worker runs its tasks in hops (``sparkstorm.superstep.hops`` more after the
first): what a task emits to a task of the same worker, acks to a co-located acker
included, runs in the next hop, and only what goes to another worker (or every emit of
the last hop) waits for the next superstep. A pair of tasks is either always on one
worker or never, and each sender's rows leave in the order it emitted them, so FIFO per
(sender, receiver) holds. The hop bound keeps a cycle (a bolt subscribed to itself)
from holding a superstep.
"""

from __future__ import annotations

from collections.abc import Callable

from sparkstorm.topology.tuple import Row, Tuple

RunTask = Callable[[int, list[Tuple], list[Row], int], None]
"""``run(task_id, tuples, out, hop)``: execute ``tuples`` on the task, emitting into ``out``."""


def run_in_hops(
    queue: dict[int, list[Tuple]],
    run: RunTask,
    *,
    worker_of: dict[int, int],
    worker: int,
    hops: int,
    ackers: frozenset[int],
) -> dict[int, list[Row]]:
    """Run ``queue`` (task -> its inputs, in delivery order) on ``worker`` in hops.

    Returns what each task that ran sent out of the worker, in emission order: its rows
    for the next superstep (an acker's: its outcomes, which always leave at once).
    Tasks run in task-id order within a hop, as on every engine.
    """
    sent: dict[int, list[Row]] = {}
    for hop in range(hops + 1):
        local: dict[int, list[Tuple]] = {}
        for task_id in sorted(queue):
            out: list[Row] = []
            run(task_id, queue[task_id], out, hop)
            away = sent.setdefault(task_id, [])
            if task_id in ackers or hop == hops:
                away.extend(out)
                continue
            for row in out:
                if worker_of.get(row[0]) == worker:
                    local.setdefault(row[0], []).append(row[1])
                else:
                    away.append(row)
        if not local:
            break
        queue = local
    return sent
