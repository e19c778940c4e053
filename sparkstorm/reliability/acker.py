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
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import numpy as np

from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.reliability.pending_trees import PendingTrees, group_by_root
from sparkstorm.reliability.streams import (
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    ACKER_RESET_TIMEOUT_STREAM_ID,
    RESULT_FIELDS,
)
from sparkstorm.topology.components import Bolt
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.tuple import TICK_STREAM_ID, Tuple

INIT, ACK, FAIL, RESET = range(4)
_STREAM = attrgetter("source_stream")
_ZERO = np.zeros(1, np.uint64)
_KIND = {
    ACKER_INIT_STREAM_ID: INIT,
    ACKER_ACK_STREAM_ID: ACK,
    ACKER_FAIL_STREAM_ID: FAIL,
    ACKER_RESET_TIMEOUT_STREAM_ID: RESET,
}


class Acker(Bolt):
    """Component ``__acker``: sends each tree's outcome to the spout task that emitted it."""

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Start with an empty pending map."""
        self.collector = collector
        self.pending = PendingTrees()

    def execute(self, tup: Tuple) -> None:
        """Apply one message (see :meth:`execute_batch`)."""
        self.execute_batch([tup])

    def execute_batch(self, tuples: list[Tuple]) -> int:
        """Apply init/ack/fail/reset messages in order; a tick rotates the pending map.

        Returns how many roots the messages named (a batch names many): what Storm would
        count as executed ack tuples, each acked by the acker (its statistics say so).
        """
        if TICK_STREAM_ID not in map(_STREAM, tuples):
            applied = self._apply(tuples)
            self.collector.acked += applied
            return applied
        segment: list[Tuple] = []
        applied = 0
        for tup in tuples:
            if tup.source_stream == TICK_STREAM_ID:
                applied += self._apply(segment)
                segment = []
                self.pending.rotate()  # what expires is dropped: the spout times it out
            else:
                segment.append(tup)
        applied += self._apply(segment)
        self.collector.acked += applied
        return applied

    def _apply(self, tuples: list[Tuple]) -> int:
        if not tuples:
            return 0
        parts: tuple[list[Any], ...] = ([], [], [], [])  # roots, ack vals, spout tasks, kinds
        for tup in tuples:  # init and ack messages are batches: arrays of roots and vals
            kind, values = _KIND[tup.source_stream], tup.values
            ids = np.asarray(values[0], np.uint64).reshape(-1)
            if kind == FAIL:  # an ack fail may precede its init
                self.pending.reasons.setdefault(values[0], values[1])
            parts[0].append(ids)
            parts[1].append(np.asarray(values[1], np.uint64) if kind <= ACK else _ZERO)
            parts[2].append(np.full(len(ids), values[2] if kind == INIT else -1, np.int32))
            parts[3].append(np.full(len(ids), kind, np.int8))
        roots, vals, tasks, kinds = map(np.concatenate, parts)
        adds = kinds <= ACK  # the messages that carry an ack val

        order, starts = group_by_root(roots)
        unique = roots[order][starts]
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
        slots[~known] = pending.insert(unique[~known], xor[~known], task[~known])
        self._decide(unique, slots, reset)
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
