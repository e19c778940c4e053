"""The ``local`` engine: every task in the driver process, for tests, debugging, small jobs.

Task instances stay resident, so a bolt's attributes persist as in a Storm worker. Rows
are delivered grouped by target task in emission order, which keeps Storm's FIFO per
(sender, receiver) pair.
"""

from __future__ import annotations

import time
from itertools import chain

from sparkstorm.config import TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE
from sparkstorm.engines.base import Captured, StepResult
from sparkstorm.engines.rows import KIND_TUPLES, RowCodec, new_columns
from sparkstorm.reliability.collectors import ReportedError, Row
from sparkstorm.runtime.profile import Profile
from sparkstorm.runtime.task_runner import BoltTask
from sparkstorm.runtime.task_state import snapshot
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.tuple import Tuple


class LocalEngine:
    """Runs bolt and acker tasks in-process, one superstep at a time."""

    name = "local"
    target_superstep_secs = 0.05
    """Short: a local superstep costs almost nothing beyond its tuples."""
    busy = False
    """Each superstep runs to the end before ``superstep`` returns."""

    def __init__(self) -> None:
        self._tasks: dict[int, BoltTask] = {}
        self._ackers: frozenset[int] = frozenset()
        self._in_flight: list[Row] = []
        self._capture: frozenset[str] = frozenset()
        self.running: BoltTask | None = None
        """The task whose superstep runs now, for the watchdog."""

    def start(self, plan: Plan, seed: int, capture: frozenset[str]) -> None:
        """Create one resident task per bolt and acker task, and prepare it."""
        self._tasks = {t: BoltTask(plan, t, seed) for t in plan.acker_tasks + plan.bolt_tasks}
        for task in self._tasks.values():
            task.prepare()
        self._ackers = frozenset(plan.acker_tasks)
        self._capture = capture
        # Storm's topology.testing.always.try.serialize: catch here what Spark would reject
        # (tuples' values, and the bolts' attributes, which Spark snapshots)
        self._codec = RowCodec(plan) if plan.conf[TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE] else None

    def superstep(self, rows: list[Row], superstep: int, now: float) -> StepResult:
        """Deliver the held rows and ``rows`` one hop; keep what the tasks emit."""
        started = time.perf_counter()
        inbox: dict[int, list[Tuple]] = {}
        for target, tup in chain(self._in_flight, rows):
            queue = inbox.get(target)
            if queue is None:
                inbox[target] = [tup]
            else:
                queue.append(tup)
        emitted: list[Row] = []
        outcomes: list[Row] = []
        captured: Captured = []
        errors: list[ReportedError] = []
        delivered = time.perf_counter()
        for task_id in sorted(inbox):
            task = self._tasks[task_id]
            self.running = task
            out = outcomes if task_id in self._ackers else emitted
            task.run(
                inbox[task_id],
                superstep,
                now,
                out,
                captured if task.component_id in self._capture else None,
            )
            if task.collector.errors:
                errors.extend(task.collector.errors)
                task.collector.errors.clear()
            if self._codec is not None:  # Spark snapshots a task's state after each superstep
                snapshot(task)
        self.running = None
        if self._codec is not None:
            self._codec.envelopes(chain(rows, emitted), 0, KIND_TUPLES, new_columns())
        self._in_flight = emitted
        stats = [self._tasks[t].stats for t in inbox]
        profile = Profile(deliver=delivered - started, execute=time.perf_counter() - delivered)
        return StepResult(outcomes, len(emitted), stats, errors, captured, profile, superstep)

    def collect(self) -> StepResult | None:
        """Nothing is ever left running."""
        return None

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
