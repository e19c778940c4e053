"""The acker: a system bolt tracking each tuple tree in about 20 bytes (Storm's ``Acker``).

Per root id it keeps the XOR of every edge id created or acked in the tree (``ack val``)
and the spout task that emitted the root. The value is 0 exactly when every tuple of
the tree was acked (up to a 2**-64 chance). Messages for a root may come in any order:
an ack or fail may arrive before the init, so every message "gets or creates" the entry,
and a decision waits until the init has named the spout task. Then, as in Storm: a zero
value acks the tree, else a failure fails it, else a reset is passed on to the spout;
init and ack leave the expiry alone, fail and reset refresh it.

Unlike Storm's, this acker applies the messages a task receives in one superstep as a
batch (the per-root XOR is order-free), over the compact arrays of
:class:`PendingTrees`. Ticks split the batch: each rotates the pending map in order.
Within a batch, a message arriving after its tree was decided does not make an orphan
entry; it joins the decision. Either way, it changes no outcome.

Stateful bolts' acks come on ``__ack_hold`` and are kept apart (``held``): a tree
whose acks are all in, some held, is *ready*; the driver's ``prepare`` notes the ready
trees and its ``commit`` completes them, once a checkpoint holds what they changed. A
tree failed or expired with held acks, or a held ack for a tree already decided, left a
failed tree's effect in uncommitted state: ``state_failures`` counts them, and the
driver rolls the stateful tasks back.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import numpy as np

from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.reliability.pending_trees import BUCKETS, LIVE, PendingTrees, group_by_root
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

INIT, ACK, HOLD, FAIL, RESET = range(5)
_STREAM = attrgetter("source_stream")
_ZERO = np.zeros(1, np.uint64)
_KIND = {
    ACKER_INIT_STREAM_ID: INIT,
    ACKER_ACK_STREAM_ID: ACK,
    ACKER_HOLD_STREAM_ID: HOLD,
    ACKER_FAIL_STREAM_ID: FAIL,
    ACKER_RESET_TIMEOUT_STREAM_ID: RESET,
}
_SPLITS = {TICK_STREAM_ID, CHECKPOINT_STREAM_ID}


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
        self.state_failures = 0
        self.decided: dict[int, list[Any]] = {}  # rotation -> roots failed or expired then
        self.prepared = _ZERO[:0]  # roots whose held acks the checkpoint being taken holds

    def execute(self, tup: Tuple) -> None:
        """Apply one message (see :meth:`execute_batch`)."""
        self.execute_batch([tup])

    def execute_batch(self, tuples: list[Tuple]) -> int:
        """Apply init/ack/fail/reset messages in order; a tick rotates the pending map.

        Returns how many roots the messages named (a batch names many): what Storm would
        count as executed ack tuples, each acked by the acker (its statistics say so).
        """
        if _SPLITS.isdisjoint(map(_STREAM, tuples)):
            applied = self._apply(tuples)
        else:
            segment: list[Tuple] = []
            applied = 0
            for tup in tuples:
                if tup.source_stream in _SPLITS:
                    applied += self._apply(segment)
                    segment = []
                    self._control(tup)
                else:
                    segment.append(tup)
            applied += self._apply(segment)
        self.collector.acked += applied
        return applied

    def _control(self, tup: Tuple) -> None:
        """A tick rotates the pending map; a checkpoint commits or drops held acks."""
        pending = self.pending
        if tup.source_stream == TICK_STREAM_ID:
            expired = pending.rotate()  # what expires is dropped: the spout times it out
            if self.stateful:
                self.state_failures += int(np.count_nonzero(pending.held[expired]))
                oldest = pending.rotation - BUCKETS
                self.decided = {r: d for r, d in self.decided.items() if r > oldest}
                self.decided.setdefault(pending.rotation, []).append(pending.keys[expired])
        elif tup.values[0] == "prepare":  # the trees whose held acks this checkpoint holds
            ready = (pending.state == LIVE) & (pending.held != 0) & (pending.vals == pending.held)
            self.prepared = pending.keys[ready]
        elif tup.values[0] == "commit":  # their held acks now count
            slots = pending.find(self.prepared)
            slots = slots[slots >= 0]
            pending.vals[slots] ^= pending.held[slots]
            pending.held[slots] = 0
            self._decide(pending.keys[slots], slots, np.zeros(len(slots), bool))
            self.prepared = _ZERO[:0]
        else:  # rollback: the spouts fail every pending tree themselves
            self.pending, self.decided, self.prepared = PendingTrees(held=True), {}, _ZERO[:0]

    def _recently_decided(self) -> Any:
        return np.concatenate([_ZERO[:0], *(r for d in self.decided.values() for r in d)])

    @property
    def unready(self) -> int:
        """Trees with a tuple not yet acked anywhere (a checkpoint waits for them)."""
        p = self.pending
        live = (p.state == LIVE) & (p.tasks >= 0)
        return int(np.count_nonzero(live & (p.vals != p.held)))

    def _apply(self, tuples: list[Tuple]) -> int:
        if not tuples:
            return 0
        parts: tuple[list[Any], ...] = ([], [], [], [])  # roots, ack vals, spout tasks, kinds
        for tup in tuples:  # init, ack and hold messages are batches: arrays of roots and vals
            kind, values = _KIND[tup.source_stream], tup.values
            ids = np.asarray(values[0], np.uint64).reshape(-1)
            if kind == FAIL:  # an ack fail may precede its init
                self.pending.reasons.setdefault(values[0], values[1])
            parts[0].append(ids)
            parts[1].append(np.asarray(values[1], np.uint64) if kind <= HOLD else _ZERO)
            parts[2].append(np.full(len(ids), values[2] if kind == INIT else -1, np.int32))
            parts[3].append(np.full(len(ids), kind, np.int8))
        roots, vals, tasks, kinds = map(np.concatenate, parts)
        adds = kinds <= HOLD  # the messages that carry an ack val

        order, starts = group_by_root(roots)
        unique = roots[order][starts]
        held = None
        if self.stateful:  # held acks go apart from the others
            holds = kinds == HOLD
            held = np.bitwise_xor.reduceat(np.where(holds, vals, 0)[order], starts)
            vals = np.where(holds, 0, vals)
        xor = np.bitwise_xor.reduceat(vals[order], starts)
        task = np.maximum.reduceat(tasks[order], starts)
        refresh = np.logical_or.reduceat(~adds[order], starts)  # fail and reset refresh
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
        if held is not None:
            pending.held[old] ^= held[known]
            late = new & (held != 0)
            if late.any():
                late &= np.isin(unique, self._recently_decided())
            self.state_failures += int(np.count_nonzero(late))  # its tree was decided already
            new &= ~late
            slots[late] = -1
        slots[new] = pending.insert(unique[new], xor[new], task[new])
        if held is not None:
            pending.held[slots[new]] = held[new]
        mine = slots >= 0
        self._decide(unique[mine], slots[mine], reset[mine])
        return len(roots)

    def _decide(self, roots: Any, slots: Any, reset: Any) -> None:
        pending = self.pending
        spout_tasks = pending.tasks[slots]
        vals = pending.vals[slots]
        decidable = spout_tasks >= 0
        acked = decidable & (vals == 0)  # a zero value wins over a failure
        failed = decidable & ~acked
        if pending.reasons:
            failed &= np.fromiter((r in pending.reasons for r in roots.tolist()), bool, len(roots))
        else:
            failed[:] = False
        resets = decidable & ~acked & ~failed & reset
        if self.stateful and failed.any():
            self.state_failures += int(np.count_nonzero(pending.held[slots[failed]]))
            self.decided.setdefault(pending.rotation, []).append(roots[failed])
        pending.remove(slots[acked | failed])
        reasons = [pending.reasons.pop(root) for root in roots[failed].tolist()]
        self._tell(ACKER_ACK_STREAM_ID, roots[acked], spout_tasks[acked])
        self._tell(ACKER_FAIL_STREAM_ID, roots[failed], spout_tasks[failed], reasons)
        self._tell(ACKER_RESET_TIMEOUT_STREAM_ID, roots[resets], spout_tasks[resets])

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
