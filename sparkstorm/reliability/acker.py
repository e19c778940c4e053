"""The acker: a bolt that tells spout tasks how their tuple trees ended (Storm's ``Acker``).

Per root id it keeps the XOR of every edge id created or acked in the tree (the *ack
val*) and the spout task that emitted the root. The value is 0 exactly when every tuple
of the tree was acked (up to a 2**-64 chance). Messages for a root may come in any
order: an ack or fail may arrive before the init, so every message gets or creates the
entry, and a decision waits until the init has named the spout task. Then, as in
Storm's ``execute``: a zero value acks the tree, else a failure fails it, else a reset is
passed on to the spout; init and ack leave the expiry alone, fail and reset refresh it.

Unlike Storm's, this acker applies the messages a task receives in one turn as a batch
(the per-root XOR is order-free) over :class:`PendingTrees`, numpy arrays in which a
pending tree costs 22 bytes of slot, 40 bytes of memory at the table's load and 21 in a
snapshot (``benchmarks/acker.py``, 1M trees). Ticks and checkpoint instructions split a
batch, so each applies in order. Within a batch, a message arriving after its tree was
decided joins the decision instead of making an orphan entry: no outcome changes.
With stateful bolts, their acks are held until a checkpoint commits (:mod:`.held_acks`).
"""

from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.reliability.held_acks import HeldAcks
from sparkstorm.reliability.pending_trees import PendingTrees, group_by_root
from sparkstorm.topology.components import Bolt
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.streams import (
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_HOLD_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    ACKER_RESET_TIMEOUT_STREAM_ID,
    CHECKPOINT_STREAM_ID,
    RESULT_FIELDS,
    TICK_STREAM_ID,
)
from sparkstorm.topology.tuple import Tuple

if TYPE_CHECKING:
    from sparkstorm.tasks.metrics import TaskStats

INIT, ACK, HOLD, FAIL, RESET = range(5)
_KIND = {
    ACKER_INIT_STREAM_ID: INIT,
    ACKER_ACK_STREAM_ID: ACK,
    ACKER_HOLD_STREAM_ID: HOLD,
    ACKER_FAIL_STREAM_ID: FAIL,
    ACKER_RESET_TIMEOUT_STREAM_ID: RESET,
}
_STREAM = attrgetter("source_stream")
_SPLITS = {TICK_STREAM_ID, CHECKPOINT_STREAM_ID}
_ZERO = np.zeros(1, np.uint64)


class Acker(Bolt):
    """Component ``__acker``: sends each tree's outcome to the spout task that emitted it."""

    def __init__(self, stateful: bool = False) -> None:
        self.stateful = stateful
        """Whether the topology has stateful bolts (their acks are held until a commit)."""

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Start with an empty pending map."""
        self.collector = collector
        self.pending = PendingTrees(held=self.stateful)
        self.held = HeldAcks(self.pending) if self.stateful else None

    def execute(self, tup: Tuple) -> None:
        """Apply one message (see :meth:`execute_batch`)."""
        self.execute_batch([tup])

    def execute_batch(self, tuples: list[Tuple]) -> int:
        """Apply init/ack/fail/reset messages in order; ticks and checkpoints split them.

        Returns how many roots the messages named (a batch names many): what Storm would
        count as executed ack tuples, each acked by the acker (its statistics say so).
        """
        applied = 0
        segment: list[Tuple] = []
        if not _SPLITS.isdisjoint(map(_STREAM, tuples)):
            for tup in tuples:
                if tup.source_stream in _SPLITS:
                    applied += self._apply(segment)
                    segment = []
                    self._control(tup)
                else:
                    segment.append(tup)
            tuples = segment
        applied += self._apply(tuples)
        self.collector.acked += applied
        return applied

    def _control(self, tup: Tuple) -> None:
        """A tick rotates the pending map; a checkpoint instruction goes to the held acks."""
        if tup.source_stream == TICK_STREAM_ID:
            expired = self.pending.rotate()  # dropped silently: the spout times them out
            if self.held is not None:
                self.held.expired(expired)
            return
        assert self.held is not None, "checkpoints reach ackers of stateful topologies only"
        action = tup.values[0]
        if action == "prepare":
            self.held.prepare()
        elif action == "stalled":  # the drain waited too long: name what it waits for
            self.held.name_stalled(tup.values[1])
        elif action == "commit":
            slots = self.held.commit()
            self._decide(self.pending.keys[slots], slots, np.zeros(len(slots), bool))
        else:  # rollback: the spouts fail every pending tree themselves
            self.pending = PendingTrees(held=True)
            self.held = HeldAcks(self.pending, self.held.state_failures)

    @property
    def state_failures(self) -> int:
        """Trees whose failure left an effect in uncommitted state (stateful topologies)."""
        return 0 if self.held is None else self.held.state_failures

    @property
    def unready(self) -> int:
        """Trees with a tuple not yet acked anywhere (a checkpoint waits for them)."""
        return 0 if self.held is None else self.held.unready

    def report_stats(self, stats: TaskStats) -> None:
        """Copy the checkpoint counters into the task's statistics (stateful topologies)."""
        if self.held is not None:
            stats.unready, stats.state_failures = self.held.unready, self.held.state_failures
            stats.culprits = dict(self.held.stalled)

    def _apply(self, tuples: list[Tuple]) -> int:
        """Combine the messages per root, apply them to the pending map, decide."""
        if not tuples:
            return 0
        roots, vals, tasks, kinds = self._arrays(tuples)
        order, starts = group_by_root(roots)
        unique = roots[order][starts]
        if self.held is not None:
            vals, held = self.held.split(kinds == HOLD, vals, order, starts)
        xor = np.bitwise_xor.reduceat(vals[order], starts)
        task = np.maximum.reduceat(tasks[order], starts)
        refresh = np.logical_or.reduceat(kinds[order] >= FAIL, starts)  # fail, reset
        reset = np.logical_or.reduceat(kinds[order] == RESET, starts)

        pending = self.pending
        pending.reserve(len(unique))
        slots = pending.find(unique)
        known = slots >= 0
        old = slots[known]
        pending.vals[old] ^= xor[known]
        named = task[known] >= 0
        pending.tasks[old[named]] = task[known][named]
        pending.refresh(old[refresh[known]])
        new = ~known
        if self.held is not None:
            late = self.held.apply(unique, slots, held)
            new &= ~late
            slots[late] = -1
        slots[new] = pending.insert(unique[new], xor[new], task[new])
        if self.held is not None:
            self.held.created(slots[new], held[new])
        mine = slots >= 0
        self._decide(unique[mine], slots[mine], reset[mine])
        return len(roots)

    def _arrays(self, tuples: list[Tuple]) -> tuple[Any, Any, Any, Any]:
        """Roots, ack vals, spout tasks and message kinds, one entry per root named."""
        parts: tuple[list[Any], ...] = ([], [], [], [])
        for tup in tuples:  # init, ack and hold messages are batches: arrays of roots, vals
            kind, values = _KIND[tup.source_stream], tup.values
            ids = np.asarray(values[0], np.uint64).reshape(-1)
            if kind == FAIL:  # a fail may precede its init: keep the reason till then
                self.pending.reasons.setdefault(values[0], values[1])
            parts[0].append(ids)
            parts[1].append(np.asarray(values[1], np.uint64) if kind <= HOLD else _ZERO)
            parts[2].append(np.full(len(ids), values[2] if kind == INIT else -1, np.int32))
            parts[3].append(np.full(len(ids), kind, np.int8))
        roots, vals, tasks, kinds = map(np.concatenate, parts)
        return roots, vals, tasks, kinds

    def _decide(self, roots: Any, slots: Any, reset: Any) -> None:
        """Storm's decision block, for many roots at once."""
        pending = self.pending
        spout_tasks, vals = pending.tasks[slots], pending.vals[slots]
        decidable = spout_tasks >= 0  # the init has named the spout task
        acked = decidable & (vals == 0)  # a zero value wins over a failure
        failed = decidable & ~acked & self._failing(roots)
        resets = decidable & ~acked & ~failed & reset
        if self.held is not None and failed.any():
            self.held.failed(roots[failed], slots[failed])
        pending.remove(slots[acked | failed])
        reasons = [pending.reasons.pop(root) for root in roots[failed].tolist()]
        self._tell(ACKER_ACK_STREAM_ID, roots[acked], spout_tasks[acked])
        self._tell(ACKER_FAIL_STREAM_ID, roots[failed], spout_tasks[failed], reasons)
        self._tell(ACKER_RESET_TIMEOUT_STREAM_ID, roots[resets], spout_tasks[resets])

    def _failing(self, roots: Any) -> Any:
        """Which of ``roots`` a fail message has named (they keep their reason till decided)."""
        reasons = self.pending.reasons
        if not reasons:
            return np.zeros(len(roots), bool)
        return np.fromiter((r in reasons for r in roots.tolist()), bool, len(roots))

    def _tell(
        self, stream: str, roots: Any, spout_tasks: Any, details: list[Any] | None = None
    ) -> None:
        """One outcome tuple per spout task: [root ids, details (fail reasons) or None]."""
        for spout_task in np.unique(spout_tasks).tolist():
            mine = spout_tasks == spout_task
            ids = roots[mine].tolist()
            self.collector.emitted += len(ids)  # Storm counts an outcome per root
            extra = (
                None
                if details is None
                else [d for d, m in zip(details, mine.tolist(), strict=True) if m]
            )
            self.collector._emit_system(spout_task, stream, RESULT_FIELDS, [ids, extra])
