"""The driver's side of checkpoints: when to take one, its two phases, and rollbacks.

Storm's ``CheckpointSpout``, for a superstep engine. Every
``topology.state.checkpoint.interval.ms`` of topology time, when the topology has
stateful bolts:

1. **Drain.** The spouts stop being asked for tuples until nothing is in flight and
   every tracked tree is *ready* (all its tuples acked, some acks held by stateful
   bolts). The cut between two supersteps then has empty channels, and no tree has
   changed one stateful task but not yet another.
2. **Prepare.** A ``prepare`` tuple goes to every stateful task (it stages its changes
   in the store) and every acker (it notes the ready trees). The spouts resume in the
   same superstep: what they emit is after the cut everywhere.
3. **Commit.** When every stateful task reports the checkpoint staged, the driver writes
   the store's marker (the commit) and acks the ready trees to their spouts at once; a
   ``commit`` tuple folds the staged changes in and clears the ackers' held acks. The
   trees pending at the prepare are *sealed* until then: only the checkpoint decides
   them (they do not time out), so a superstep lost after the marker, which rolls back,
   cannot fail a tree whose effect is committed.

A **rollback** follows any failure that may have left an effect of a failed tree in
uncommitted state (a stateful bolt failed an input or raised; a tree failed or expired
with held acks; a spout timed a tree out; a checkpoint could not be staged; a Spark
superstep was lost): the rows in flight are dropped, every pending tree fails back to
its spout with reason ``rollback`` (not an attempt), and every stateful task returns to
the last commit.
"""

from __future__ import annotations

import sys
import weakref
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sparkstorm._types import ROLLBACK, TIMEOUT, FailReason
from sparkstorm.config import (
    TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    TOPOLOGY_NAME,
    TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS,
    provider_config,
    state_provider,
)
from sparkstorm.errors import InvalidTopologyError, StateStoreError
from sparkstorm.state.stores import Sources, Store, open_store, probe, unreachable
from sparkstorm.tasks.committed_sources import CommittedSources, sealed_keys
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.tuple import Row, checkpoint_tuple

if TYPE_CHECKING:
    from sparkstorm.control.superstep import TopologyRuntime
    from sparkstorm.engines.wire import StepResult

RUNNING, DRAINING, COMMITTING = "running", "draining", "committing"

DRAIN_LIMIT_SECS = 5.0
"""The longest a checkpoint's drain waits (a third of the message timeout if shorter)."""


R = TypeVar("R")
"""The runtime a mode's checkpoints serve."""


class CheckpointStore(Generic[R]):
    """What both modes' checkpoints share: the interval, the store, the counters."""

    def __init__(self, runtime: R, plan: Plan, conf: dict[str, Any]) -> None:
        self._runtime = weakref.ref(runtime)  # not a cycle: a run ends without the collector
        self.conf = conf
        self.tasks = plan.stateful_tasks
        self.ackers = plan.acker_tasks
        self.interval = conf[TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS] / 1000
        timeout = conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS]
        if self.tasks and conf[TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS] and self.interval >= timeout:
            msg = (
                f"topology.state.checkpoint.interval.ms ({self.interval * 1000:g}) is not "
                f"less than topology.message.timeout.secs ({timeout:g} s): a stateful bolt's "
                f"inputs complete only at the checkpoint after them, so every tree would time "
                f"out first. Lower the interval or raise the timeout"
            )
            raise InvalidTopologyError(msg)
        self.store: Store | None = None
        self.committed = -1
        """The last committed checkpoint (a restarted topology resumes from it)."""
        committed_sources: Sources = {}
        if self.tasks:
            provider, config = state_provider(conf), provider_config(conf)
            try:
                probe(provider, config)  # down at start: say so now, not after the retries
                self.store = open_store(provider, config, conf[TOPOLOGY_NAME])
                self.committed = self.store.committed_txid()
                committed_sources = self.store.committed_sources()
            except Exception as exc:  # one line naming the store and what to check
                raise StateStoreError(unreachable(provider, config, exc)) from None
        self.sources = CommittedSources(committed_sources, conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS])
        """The spout messages each commit completes; a restart skips them if they come again."""
        self.phase = RUNNING
        self.commits = 0
        """Checkpoints committed by this run."""
        self.rollbacks = 0
        """Rollbacks in this run."""
        self.next_due = self.interval
        self.drain_limit = min(timeout / 3, DRAIN_LIMIT_SECS)
        """How long a drain may wait for its trees before the ackers name the stragglers."""
        self.drain_since = 0.0
        """When the drain began, or last made progress (fewer trees left unready)."""
        self._unready_low = 0

    @property
    def runtime(self) -> R:
        """The runtime these checkpoints serve (held weakly: it holds them)."""
        runtime = self._runtime()
        assert runtime is not None, "the run ended"
        return runtime

    @property
    def pausing(self) -> bool:
        """Whether the spouts must not be asked for tuples now (a drain)."""
        return self.phase == DRAINING

    @property
    def enabled(self) -> bool:
        """Whether the topology has stateful bolts."""
        return bool(self.tasks)

    def status(self) -> dict[str, Any] | None:
        """What the REST API shows (None without stateful bolts)."""
        if not self.enabled:
            return None
        return {
            "committedTxid": self.committed,
            "phase": self.phase,
            "intervalSecs": self.interval,
            "commits": self.commits,
            "rollbacks": self.rollbacks,
        }

    def mark_committed(self, txid: int, sealed: Sources, now: float) -> None:
        """Write the store's marker: ``txid`` is committed, completing ``sealed``'s messages."""
        assert self.store is not None
        try:
            self.store.mark_committed(txid, self.sources.commit(sealed, now))
        except Exception as exc:  # down for longer than its retries wait: one line
            provider, config = state_provider(self.conf), provider_config(self.conf)
            raise StateStoreError(unreachable(provider, config, exc)) from None
        self.committed, self.phase = txid, RUNNING
        self.commits += 1

    def instructions(self, action: str, txid: int) -> list[Row]:
        """``action`` for every stateful task and acker, as rows."""
        return [(task, checkpoint_tuple(action, txid)) for task in self.tasks + self.ackers]

    def draining(self, now: float) -> None:
        """A drain begins now."""
        self.phase, self.drain_since, self._unready_low = DRAINING, now, sys.maxsize

    def progress(self, unready: int, now: float) -> bool:
        """Whether the ackers' count of unready trees is progress: fewer than ever this drain.

        Progress starts the drain's clock again. A drain that is slow, not stuck (a loaded
        machine, a first superstep that starts Spark's Python workers), must not have its
        trees named as stalled: they would fail as timed out and roll back every other
        tree, a rollback storm.
        """
        if self.phase != DRAINING or unready >= self._unready_low:
            return False
        self._unready_low, self.drain_since = unready, now
        return True

    def stalled(self, now: float) -> float | None:
        """How long the drain has waited without progress, once that is too long (else None).

        A tree that never completes (a bolt that forgot to ack) would hold every other
        tree's held acks until all of them timed out, each an attempt counted; after
        :attr:`drain_limit` without a tree getting ready the ackers name it instead and
        the driver rolls back.
        """
        waited = now - self.drain_since
        return waited if self.phase == DRAINING and waited > self.drain_limit else None


class Checkpoints(CheckpointStore["TopologyRuntime"]):
    """Schedules checkpoints and rollbacks for one topology run (a no-op without state)."""

    def __init__(self, runtime: TopologyRuntime) -> None:
        super().__init__(runtime, runtime.plan, runtime.conf)
        self._stateful = frozenset(self.tasks)
        self.spouts = list(runtime.spouts.values())
        for spout in self.spouts:
            spout.skip_committed(self.sources)
        self.last_emit = -1
        """The last superstep in which a spout emitted (a drain must have seen it through)."""
        self._prepared: tuple[int, int] | None = None  # (txid, superstep of its prepare)
        self._failures: dict[int, int] = {}
        self._timeouts = 0  # trees the spouts timed out, as last seen
        self._rollback = False
        self._asked = False  # whether the ackers were asked to name a drain's stragglers
        self._culprits: dict[int, FailReason] = {}
        self._drain_result = 0
        """The superstep whose result a stall verdict waits for (one after any progress)."""
        self.dirty = False
        """Whether a spout emitted or a tick fired since the last checkpoint's prepare."""

    def sending(self, superstep: int, ticks: list[Row], emitted: list[Row]) -> None:
        """Note what the driver sends in ``superstep``: what a checkpoint must see through."""
        if emitted:
            self.last_emit, self.dirty = superstep, True
        elif ticks and not self.dirty:
            self.dirty = any(task in self._stateful for task, _ in ticks)

    def observe(self, result: StepResult) -> None:
        """Take in a superstep's result: failures that call for a rollback, staged tasks."""
        if not self.enabled:
            return
        if result.lost:  # every task starts afresh: its failure counter from zero again
            self._rollback, self._failures = True, {}
        for stats in result.stats:
            seen = self._failures.get(stats.task, 0)
            if stats.state_failures > seen:
                self._rollback = True
            self._failures[stats.task] = stats.state_failures
            self._culprits.update(stats.culprits)
            if stats.culprits and stats.task in self.ackers and self._asked:
                self._rollback = True  # trees named as stalling the drain

    def rows(self, now: float) -> list[Row]:
        """The checkpoint instructions to send in this step (before every other row)."""
        if not self.enabled:
            return []
        timeouts = sum(s.stats.fail_reasons.get(TIMEOUT.kind, 0) for s in self.spouts)
        if timeouts != self._timeouts:
            # The acker keeps a tree a rotation longer than the spout (3 buckets to 2, as in
            # Storm): a tree the spout timed out may still be ready there, and a checkpoint
            # would commit the effect of a message its spout replays.
            self._timeouts, self._rollback = timeouts, True
        if self._rollback:
            return self._roll_back(now)
        runtime = self.runtime
        if self.phase == COMMITTING and self._prepared is not None:
            txid, superstep = self._prepared
            if runtime.last_result_superstep < superstep:
                return []  # the prepare's result has not come back yet
            staged = [runtime.bolt_stats[t].prepared_txid == txid for t in self.tasks]
            if not all(staged):
                return self._roll_back(now)
            self.mark_committed(txid, sealed_keys(self.spouts), now)
            self._prepared = None
            for spout in self.spouts:  # committed: nothing that follows may fail them now
                spout.ack_sealed(now)
            return self.instructions("commit", txid)
        if self.phase == RUNNING and now >= self.next_due and self.dirty:
            self.draining(now)  # (not dirty: nothing can have changed, nothing to save)
            self._asked, self._drain_result = False, runtime.superstep
        if self.progress(self._unready(), now):  # the next verdict needs a later result
            self._drain_result = runtime.superstep
        seen = runtime.last_result_superstep >= self._drain_result or not runtime.engine.busy
        if (
            self.phase == DRAINING
            and not self._asked
            and seen  # a superstep since the last progress, not one slow superstep under way
            and (waited := self.stalled(now))
        ):
            self._asked = True  # the ackers' answer, in the next result, calls the rollback
            return [(t, checkpoint_tuple("stalled", waited)) for t in self.ackers]
        if self.phase == DRAINING and self._drained():
            txid = self.committed + 1
            self.phase, self._prepared = COMMITTING, (txid, runtime.superstep)
            self.dirty = False
            self.next_due = now + self.interval
            for spout in self.spouts:
                spout.seal()
            return self.instructions("prepare", txid)
        return []

    def _unready(self) -> int:
        """Trees not ready, over every acker, as the last result said."""
        return sum(s.unready for t, s in self.runtime.bolt_stats.items() if t in self.ackers)

    def _drained(self) -> bool:
        runtime = self.runtime
        return (
            runtime.last_result_superstep >= self.last_emit
            and not runtime.in_flight
            and self._unready() == 0
        )

    def _roll_back(self, now: float) -> list[Row]:
        self.runtime.discard_pending(ROLLBACK, self._culprits)  # a running one's result first
        self._culprits, self._asked = {}, False
        self._rollback, self.phase, self._prepared = False, RUNNING, None
        self.rollbacks += 1
        self.next_due = now + self.interval
        return self.instructions("rollback", self.committed)
