"""Running a stateful bolt task: its ``KeyValueState``, held acks, checkpoint instructions.

Storm's ``StatefulBoltExecutor``. The bolt's acks go to the ackers on ``__ack_hold``:
they count once the driver's ``commit`` says a checkpoint holds what the inputs changed.
A stateful Arrow bolt's rows are held and settled the same way, a batch at a time.
The driver's instructions arrive as tuples on ``__checkpoint``: ``prepare`` stages the
changes since the last checkpoint, ``commit`` folds them in once every stateful task has
staged, ``rollback`` drops what was not committed. An input executed but neither acked
nor failed at ``prepare`` belongs to a tree that failed or expired elsewhere, so its
effect must not be committed: the task does not stage and the driver rolls back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from sparkstorm._types import FailReason
from sparkstorm.config import TOPOLOGY_NAME, provider_config, state_provider
from sparkstorm.reliability.batch_collectors import BatchOutputCollector
from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.state.key_value import KeyValueState, StateValueError
from sparkstorm.tasks.arrow_windowed import PersistentArrowWindowExecutor
from sparkstorm.tasks.metrics import TaskStats
from sparkstorm.tasks.windowed import PersistentWindowExecutor
from sparkstorm.topology.components import Bolt
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.row_batch import RowBatch
from sparkstorm.topology.streams import (
    ACKER_HOLD_STREAM_ID,
    CHECKPOINT_STREAM_ID,
    SYSTEM_COMPONENT_ID,
)
from sparkstorm.topology.tuple import Tuple


class CheckpointedInputs:
    """What a stateful task's collector keeps: held acks, inputs not yet settled, blame.

    A mixin of both stateful collectors (tuples, and an Arrow bolt's rows).
    """

    _ack_stream = ACKER_HOLD_STREAM_ID

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.unacked = 0
        """Tracked inputs (rows) executed since the last rollback and not yet settled."""
        self.rolled_back_at = 0.0
        """An ack or fail of an input received before this (wall time) is dropped: the
        rollback failed its tree and forgot what the input changed."""
        self.state_failures = 0
        self.culprits: dict[int, FailReason] = {}
        """Trees to fail as their own failure at the next rollback (see ``TaskStats``)."""

    def blame(self, roots: Iterable[int], reason: FailReason) -> None:
        """Fail ``roots`` with ``reason`` at the rollback their processing calls for."""
        for root in roots:
            self.culprits[root] = reason


class StatefulOutputCollector(CheckpointedInputs, OutputCollector):
    """A stateful bolt's collector: acks are held; inputs not yet acked are counted."""

    def ack(self, tup: Tuple) -> None:
        """Ack ``tup`` once a checkpoint holds its effect (Storm's stateful bolts do too)."""
        if tup.received_at < self.rolled_back_at:
            return
        if tup.anchors_to_ids:
            self.unacked -= 1
        super().ack(tup)

    def fail_with(self, tup: Tuple, reason: FailReason) -> None:
        """Fail ``tup``; a tracked input may have changed the state, so roll back."""
        if tup.received_at < self.rolled_back_at:
            return
        if tup.anchors_to_ids:
            self.unacked -= 1
            self.state_failures += 1  # what it changed may be in the state: roll back
            self.blame(tup.anchors_to_ids, reason)
        super().fail_with(tup, reason)


class StatefulBatchOutputCollector(CheckpointedInputs, BatchOutputCollector):
    """A stateful Arrow bolt's collector: its rows' acks are held, as a tuple's are."""

    def _ack(self, source: RowBatch, rows: Any) -> None:
        if source.received_at < self.rolled_back_at:  # rolled back: its tree failed
            self._settle(source, rows)
            return
        self.unacked -= tracked_rows(source, rows)
        super()._ack(source, rows)

    def _fail(self, source: RowBatch, rows: Any, reason: FailReason) -> None:
        if source.received_at < self.rolled_back_at:
            self._settle(source, rows)
            return
        tracked = tracked_rows(source, rows)
        if tracked:
            self.unacked -= tracked
            self.state_failures += 1  # what they changed may be in the state: roll back
            self.blame(np.unique(source.links.of(rows).roots).tolist(), reason)
        super()._fail(source, rows, reason)


def tracked_rows(source: RowBatch, rows: Any = None) -> int:
    """How many of ``rows`` (a mask; every row without it) of ``source`` are in a tree."""
    links = source.links
    if not len(links):
        return 0
    in_tree = np.zeros(source.num_rows, bool)
    in_tree[links.rows] = True
    return int(np.count_nonzero(in_tree if rows is None else in_tree & rows))


PERSISTENT_WINDOWS = (PersistentWindowExecutor, PersistentArrowWindowExecutor)
"""The window managers whose windows are a stateful task's second state."""


class StatefulBoltExecutor(Bolt):
    """Runs a stateful bolt (``delegate``), whose hooks ``user`` has."""

    def __init__(self, delegate: Bolt, user: Any) -> None:
        self.delegate = delegate
        self.user = user
        self.state: KeyValueState | None = None
        self.prepared_txid = -1
        self.checkpoint_keys = 0

    @property
    def windows(self) -> KeyValueState | None:
        """A stateful windowed bolt's windows (its task's second state), else None."""
        delegate = self.delegate
        return delegate.kv if isinstance(delegate, PERSISTENT_WINDOWS) else None

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Prepare the bolt, load its committed state, then ``init_state`` (Storm's order)."""
        assert isinstance(collector, StatefulOutputCollector | StatefulBatchOutputCollector)
        self.collector = collector
        self.delegate.prepare(conf, context, collector)
        task = f"{context.get_this_component_id()}:{context.get_this_task_id()}"
        where = (state_provider(conf), provider_config(conf), conf[TOPOLOGY_NAME])
        self.state = KeyValueState(*where, task)
        if isinstance(self.delegate, PERSISTENT_WINDOWS):
            self.delegate.restore_windows(KeyValueState(*where, f"{task}:windows"))
        self.user.init_state(self.state)

    def execute(self, tup: Tuple) -> None:
        """Execute an input, or carry out a checkpoint instruction from the driver."""
        if (
            tup.source_stream == CHECKPOINT_STREAM_ID
            and tup.source_component == SYSTEM_COMPONENT_ID
        ):
            self._checkpoint(*tup.values)
            return
        if tup.anchors_to_ids:
            self.collector.unacked += 1
        state = self.state
        assert state is not None
        state.writer = tup.anchors_to_ids
        try:
            self.delegate.execute(tup)
        finally:
            state.writer = None

    def execute_batch(self, batch: pa.RecordBatch) -> None:
        """Execute a stateful Arrow bolt's input batch; its tracked rows await settling."""
        collector = self.collector
        assert isinstance(collector, StatefulBatchOutputCollector)
        source = collector.current
        assert source is not None and self.state is not None
        collector.unacked += tracked_rows(source)
        roots = source.links.roots
        self.state.writer = dict.fromkeys(np.unique(roots).tolist(), 0) if len(roots) else None
        try:
            self.delegate.execute_batch(batch)  # type: ignore[attr-defined]
        finally:
            self.state.writer = None

    def _checkpoint(self, action: str, txid: int) -> None:
        state, collector = self.state, self.collector
        assert state is not None
        if action == "prepare":
            if collector.unacked:
                collector.state_failures += 1
                return
            try:
                self.user.pre_prepare(txid)
                if self.windows is not None:  # the tuples that came and went, the clocks
                    self.delegate.save_windows()  # type: ignore[attr-defined]
                    self.checkpoint_keys += self.windows.prepare(txid)
                self.checkpoint_keys += state.prepare(txid)
            except Exception as exc:
                collector.report_error(exc)
                collector.state_failures += 1
                if isinstance(exc, StateValueError):  # the trees that put it there: theirs
                    reason = FailReason("error", *self._where(), str(exc))
                    collector.blame(exc.roots, reason)
                return
            self.prepared_txid = txid
        elif action == "commit":
            self.user.pre_commit(txid)
            for kv in self._states():
                kv.commit(txid)
        elif action == "rollback":  # to ``txid``, the last checkpoint committed
            self.user.pre_rollback()
            for kv in self._states():
                kv.commit(txid)  # staged and committed, not yet folded in (a commit failed)
                kv.rollback()
            if self.windows is not None:
                self.delegate.restore_windows(self.windows)  # type: ignore[attr-defined]
            collector.rolled_back_at, collector.unacked = time.time(), 0
            collector.culprits = {}
            self.prepared_txid = -1
        # "stop" (the topology stops): a stateful window's tuples are in its state

    def quarantine(self, dumps: Callable[[Any], bytes]) -> bool:
        """Take what ``dumps`` refuses out of the state, as a staging error would.

        A snapshot of the task (the superstep mode's) could not be pickled: entries that
        cannot be stored are taken out, their trees blamed and a rollback called for, so
        that every engine treats such a value alike. False: the state holds none.
        """
        assert self.state is not None
        error = self.state.take_unstorable(dumps)
        if error is None:
            return False
        collector = self.collector
        collector.report_error(error)
        collector.state_failures += 1
        collector.blame(error.roots, FailReason("error", *self._where(), str(error)))
        return True

    def _where(self) -> tuple[str, int]:
        return self.collector.component_id, self.collector.task_id

    def _states(self) -> list[KeyValueState]:
        assert self.state is not None
        return [self.state] if self.windows is None else [self.state, self.windows]

    def report_stats(self, stats: TaskStats) -> None:
        """Copy the task's checkpoint counters (and its windows' late count) into ``stats``."""
        if isinstance(self.delegate, PERSISTENT_WINDOWS):
            self.delegate.report_stats(stats)
        stats.state_failures = self.collector.state_failures
        stats.culprits = dict(self.collector.culprits)
        stats.prepared_txid = self.prepared_txid
        stats.checkpoint_keys = self.checkpoint_keys

    def restore_counters(self, stats: TaskStats) -> None:
        """Continue the counters from a snapshot's ``stats`` (the task moved)."""
        self.collector.state_failures = stats.state_failures
        self.collector.culprits = dict(stats.culprits)
        self.prepared_txid = stats.prepared_txid
        self.checkpoint_keys = stats.checkpoint_keys

    def cleanup(self) -> None:
        """Clean up the bolt."""
        self.delegate.cleanup()
