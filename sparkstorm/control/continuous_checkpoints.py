"""Checkpoints of the continuous mode: aligned by draining, decided by the driver.

Storm's ``CheckpointSpout`` for workers that run for the whole run. Every
``topology.state.checkpoint.interval.ms`` of topology time, when a spout emitted since
the last one:

1. **Drain.** The workers stop asking their spouts (``pause``) until nothing is waiting
   or moving anywhere (the idle probes) and no acker holds a tree that is not *ready*
   (all its tuples acked, some acks held by stateful bolts). The cut has empty channels.
2. **Prepare.** Every worker seals its spouts' pending trees (it reports their message
   keys) and hands ``prepare`` to its stateful tasks and ackers. A probe answered after
   it says every stateful task has staged its changes.
3. **Commit.** The driver writes the store's marker, then tells every worker to
   ``commit``: its spouts ack the sealed trees at once, its tasks fold the staged
   changes in. The spouts resume.

Nothing is emitted between 1 and 3, so no tuple after the cut can overtake the
``prepare``; the price is the drain: the pipeline empties once per interval (see
docs/architecture.md for what it costs).

A **rollback** follows what may have left a failed tree's effect in uncommitted state (a
stateful bolt failed an input or raised, an acker saw a tree with held acks fail, a
spout timed a tree out, a checkpoint could not be staged). Every worker pauses its
spouts, drops the tuples it holds, takes a new *generation* (frames of an earlier one
are dropped where they arrive) and rolls its stateful tasks and ackers back to the last
commit; once every worker has answered, the spouts fail their pending trees with reason
``rollback`` (their replays go out in the new generation) and resume. A lost stage
needs no rollback: its workers start again from the last commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkstorm._types import ROLLBACK, TIMEOUT, FailReason
from sparkstorm.control.checkpoints import COMMITTING, DRAINING, RUNNING, CheckpointStore
from sparkstorm.engines.continuous.worker import FAIL_PENDING, PAUSE, ROLL_BACK, SYSTEM
from sparkstorm.state.stores import Sources

if TYPE_CHECKING:
    from sparkstorm.control.continuous import ContinuousRuntime

PROBE_SECS = 10.0
"""How long a checkpoint's or rollback's probe waits for every worker."""


class ContinuousCheckpoints(CheckpointStore["ContinuousRuntime"]):
    """Schedules checkpoints and rollbacks across the workers (a no-op without state)."""

    def __init__(self, runtime: ContinuousRuntime) -> None:
        super().__init__(runtime, runtime.plan, runtime.conf)
        self.generation = 0
        self._emitted = 0  # the spouts' emits at the last prepare
        self._failures: dict[int, int] = {}
        self._timeouts = 0

    @property
    def replays(self) -> Sources:
        """What the workers' spouts skip at a start: the store's last commit's keys."""
        return self.store.committed_sources() if self.store is not None else {}

    def restarted(self) -> None:
        """The stage started again: the new workers run from the last commit, unpaused."""
        self.phase, self.generation = RUNNING, 0
        self._failures, self._timeouts, self._emitted = {}, 0, -1

    def advance(self, now: float) -> None:
        """Roll back if a failure calls for it; start, or finish, a due checkpoint."""
        if not self.enabled or self.runtime.killed:
            return
        if self._failed():
            self._roll_back(now)
            return
        if self.phase == RUNNING and now >= self.next_due and self._dirty():
            self.draining(now)
            self.runtime.engine.command((PAUSE, True))
        stats = self.runtime.latest_stats
        self.progress(sum(stats[t].unready for t in self.ackers if t in stats), now)
        if self.phase == DRAINING and self._drained():
            self._checkpoint(now)
        elif (waited := self.stalled(now)) is not None:
            self._name_stalled(waited, now)

    def _dirty(self) -> bool:
        return sum(r.emitted for r in self.runtime.reports.values()) != self._emitted

    def _failed(self) -> bool:
        """Whether a task's failure counter or the spouts' timeouts grew since last seen."""
        stats = self.runtime.latest_stats
        failed = False
        for task in self.tasks + self.ackers:
            count = stats[task].state_failures if task in stats else 0
            failed = failed or count > self._failures.get(task, 0)
            self._failures[task] = count
        # the acker keeps a tree a rotation longer than the spout: a tree the spout timed
        # out may still be ready there, and a checkpoint would commit a replayed effect
        timeouts = sum(
            s.fail_reasons.get(TIMEOUT.kind, 0)
            for t, s in stats.items()
            if t in self.runtime.plan.spout_tasks
        )
        failed = failed or timeouts != self._timeouts
        self._timeouts = timeouts
        return failed

    def _drained(self) -> bool:
        stats = self.runtime.latest_stats
        return self.runtime.idle() and all(stats[t].unready == 0 for t in self.ackers if t in stats)

    def _checkpoint(self, now: float) -> None:
        runtime = self.runtime
        txid = self.committed + 1
        self.phase = COMMITTING
        self._emitted = sum(r.emitted for r in runtime.reports.values())
        runtime.engine.command((SYSTEM, "prepare", txid, self.tasks + self.ackers))
        answers, arrived = runtime.engine.probe(PROBE_SECS)
        sealed: dict[str, list[object]] = {}
        for report in arrived:
            runtime.take_report(report)
            for component, keys in (report.sealed or {}).items():
                sealed.setdefault(component, []).extend(keys)
        stats = runtime.latest_stats
        staged = len(answers) == runtime.engine.workers and all(
            t in stats and stats[t].prepared_txid == txid for t in self.tasks
        )
        if not staged or self._failed():
            self._roll_back(now)
            return
        self.mark_committed(txid, sealed, now)
        runtime.engine.command((SYSTEM, "commit", txid, self.tasks + self.ackers))
        runtime.engine.command((PAUSE, False))
        self.next_due = now + self.interval

    def _name_stalled(self, waited: float, now: float) -> None:
        """The drain waited too long: the ackers name its stragglers, then roll back."""
        runtime = self.runtime
        runtime.engine.command((SYSTEM, "stalled", waited, self.ackers))
        _, arrived = runtime.engine.probe(PROBE_SECS)
        for report in arrived:
            runtime.take_report(report)
        self._roll_back(now)

    def _roll_back(self, now: float) -> None:
        runtime = self.runtime
        culprits: dict[int, FailReason] = {}  # as the tasks said before they roll back
        for task in self.tasks + self.ackers:
            if task in runtime.latest_stats:
                culprits.update(runtime.latest_stats[task].culprits)
        self.generation += 1
        tasks = self.tasks + self.ackers
        runtime.engine.command((ROLL_BACK, self.committed, tasks, self.generation))
        _, arrived = runtime.engine.probe(PROBE_SECS)  # every worker dropped the old generation
        for report in arrived:
            runtime.take_report(report)
        self._failed()  # what the rolled-back tasks counted is seen
        runtime.engine.command((FAIL_PENDING, ROLLBACK, culprits))
        self.phase = RUNNING
        self.rollbacks += 1
        self.next_due = now + self.interval
