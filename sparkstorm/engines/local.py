"""The ``local`` engine: every task in the driver process, for tests, debugging, small jobs.

Task instances stay resident, so a bolt's attributes persist as in a Storm worker. The
tasks are dealt over workers as a Spark run's partitions would be, and each worker's
tasks run in hops (``tasks/hops.py``): rows are delivered grouped by target task, by
sender, in emission order, as on Spark, which keeps Storm's FIFO per (sender, receiver)
pair and lets both engines give the same outcomes.
"""

from __future__ import annotations

import time
from itertools import chain
from pathlib import Path
from typing import Any

from sparkstorm.config import (
    SPARKSTORM_SPARK_PARTITIONS,
    SPARKSTORM_SUPERSTEP_HOPS,
    TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE,
)
from sparkstorm.engines.rows import KIND_TUPLES, RowCodec, new_columns
from sparkstorm.engines.wire import Captured, StepResult
from sparkstorm.reliability.base_collector import ReportedError
from sparkstorm.reliability.debug import apply_debug
from sparkstorm.tasks.hops import run_in_hops
from sparkstorm.tasks.profile import Profile
from sparkstorm.tasks.task_runner import BoltTask
from sparkstorm.tasks.task_state import snapshot
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.tuple import Row, Tuple


class LocalEngine:
    """Runs bolt and acker tasks in-process, one superstep at a time."""

    name = "local"
    target_superstep_secs = 0.05
    """Short: a local superstep costs almost nothing beyond its tuples."""
    busy = False
    """Each superstep runs to the end before ``superstep`` returns."""
    blocked = None
    """The driver's watchdog sees a local bolt's calls itself."""

    def __init__(self) -> None:
        self._tasks: dict[int, BoltTask] = {}
        self._ackers: frozenset[int] = frozenset()
        self._in_flight: list[Row] = []
        self._capture: frozenset[str] = frozenset()
        self.running: BoltTask | None = None
        """The task whose superstep runs now, for the watchdog."""
        self.master: str | None = None
        self.ui_url: str | None = None
        self.log_file: Path | None = None

    def workers_seen(self) -> list[dict[str, Any]]:
        """None: every task runs in the driver's process."""
        return []

    def logs_seen(self) -> dict[int, list[tuple[float, str]]]:
        """None: the driver's log is the run's own."""
        return {}

    def set_log_levels(self, levels: dict[str, str]) -> None:
        """Nothing to do: the driver's loggers are the tasks' (the driver sets them)."""

    def set_debug(self, shares: dict[str, float]) -> None:
        """Storm UI's Debug: note this share of each component's calls."""
        apply_debug(self._tasks, shares)

    def call_under_way(self) -> tuple[str, Any] | None:
        """The running task's call (see ``BoltTask.call_under_way``), or None."""
        task = self.running
        return task.call_under_way() if task is not None else None

    def start(self, plan: Plan, seed: int, capture: frozenset[str]) -> None:
        """Deal the tasks over workers as Spark would; create and prepare each task."""
        # as many workers as a Spark run given the same configuration would have
        # partitions (default: one), so that both engines deliver in the same order
        plan.deal(plan.conf[SPARKSTORM_SPARK_PARTITIONS] or 1)
        self._plan = plan
        self._hops = plan.conf[SPARKSTORM_SUPERSTEP_HOPS]
        self._tasks = {t: BoltTask(plan, t, seed) for t in plan.acker_tasks + plan.bolt_tasks}
        for task in self._tasks.values():
            task.prepare()
        self._ackers = frozenset(plan.acker_tasks)
        self._capture = capture
        # Storm's topology.testing.always.try.serialize: catch here what Spark would reject
        # (tuples' values, and the bolts' attributes, which Spark snapshots)
        self._codec = RowCodec(plan) if plan.conf[TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE] else None

    def superstep(self, rows: list[Row], superstep: int, now: float) -> StepResult:
        """Deliver held rows and ``rows``; run each worker's tasks in hops, as on Spark."""
        started = time.perf_counter()
        worker_of = self._plan.worker_of
        queues: dict[int, dict[int, list[Tuple]]] = {}
        for target, tup in chain(self._in_flight, rows):
            inbox = queues.setdefault(worker_of[target], {})
            queue = inbox.get(target)
            if queue is None:
                inbox[target] = [tup]
            else:
                queue.append(tup)
        captured: Captured = []
        errors: list[ReportedError] = []
        debug: list[str] = []
        ran: set[int] = set()
        delivered = time.perf_counter()

        def run(task_id: int, tuples: list[Tuple], out: list[Row], hop: int) -> None:
            task = self._tasks[task_id]
            self.running = task
            capturing = captured if task.component_id in self._capture else None
            task.run(tuples, superstep, now, out, capturing, hop)
            ran.add(task_id)
            task.collector.hand_over(errors, debug)
            if self._codec is not None:  # what Spark may have to serialize, serialized
                self._codec.envelopes(out, 0, KIND_TUPLES, new_columns())  # even within a hop

        sent: dict[int, list[Row]] = {}
        for worker in sorted(queues):
            sent.update(
                run_in_hops(
                    queues[worker],
                    run,
                    worker_of=worker_of,
                    worker=worker,
                    hops=self._hops,
                    ackers=self._ackers,
                )
            )
        self.running = None
        # what each task sent, by sender: the order a Spark partition reads its envelopes in
        emitted = [row for t in sorted(sent) if t not in self._ackers for row in sent[t]]
        outcomes = [row for t in sorted(sent) if t in self._ackers for row in sent[t]]
        if self._codec is not None:
            self._codec.envelopes(rows, 0, KIND_TUPLES, new_columns())
            for task_id in sorted(ran):  # Spark snapshots a task's state once, after its last hop
                snapshot(self._tasks[task_id])
        self._in_flight = emitted
        stats = [self._tasks[t].stats for t in sorted(ran)]
        profile = Profile(deliver=delivered - started, execute=time.perf_counter() - delivered)
        return StepResult(
            outcomes, len(emitted), stats, errors, captured, debug, profile, superstep
        )

    def collect(self) -> StepResult | None:
        """Nothing is ever left running."""
        return None

    def interrupt(self) -> None:
        """Nothing to do: a stop signal interrupts a blocked local call where it runs."""

    def discard_in_flight(self) -> None:
        """Drop every tuple in flight (a rollback)."""
        self._in_flight = []

    def stop(self) -> list[ReportedError]:
        """Call every task's ``cleanup``."""
        errors: list[ReportedError] = []
        for task in self._tasks.values():
            task.cleanup()
            errors.extend(task.collector.errors)
        self._in_flight = []
        return errors
