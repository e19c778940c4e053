"""Acks of stateful bolts, held by the acker until a checkpoint commits what they changed.

Storm's stateful bolts ack their inputs only after a checkpoint commits; here a stateful
bolt's acks come on ``__ack_hold`` and the acker keeps their XOR apart, per tree
(``PendingTrees.held``). A tree whose acks are all in, some held, is *ready*; the
driver's ``prepare`` notes the ready trees and its ``commit`` lets their held acks count,
which completes them. A tree failed or expired with held acks, or a held ack for a tree
decided already, left a failed tree's effect in uncommitted state: ``state_failures``
counts them, and the driver rolls the stateful tasks back.

Only the acker uses this, and only in a topology with stateful bolts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sparkstorm._types import FailReason
from sparkstorm.reliability.pending_trees import BUCKETS, LIVE, PendingTrees

_NONE = np.zeros(0, np.uint64)


class HeldAcks:
    """The checkpoint side of one acker task: held acks, ready trees, state failures."""

    def __init__(self, pending: PendingTrees, state_failures: int = 0) -> None:
        self.pending = pending
        self.state_failures = state_failures
        """Trees whose failure left an effect in uncommitted state (a rollback is due)."""
        self._prepared = _NONE  # roots whose held acks the checkpoint being taken holds
        self._decided: dict[int, list[Any]] = {}  # rotation -> roots failed or expired then
        self.stalled: dict[int, FailReason] = {}
        """Trees that kept a checkpoint's drain waiting too long, named for the driver."""

    def split(self, holds: Any, vals: Any, order: Any, starts: Any) -> tuple[Any, Any]:
        """Per-message ack vals without the held ones, and the held XOR per root."""
        held = np.bitwise_xor.reduceat(np.where(holds, vals, 0)[order], starts)
        return np.where(holds, 0, vals), held

    def apply(self, roots: Any, slots: Any, held: Any) -> Any:
        """Add ``held`` to the trees at ``slots``; return the new roots not to create.

        ``slots`` is -1 for roots not pending. A held ack for such a root whose tree was
        decided lately is *late*: its effect is in the state, so it counts as a state
        failure and makes no entry.
        """
        known = slots >= 0
        self.pending.held[slots[known]] ^= held[known]
        late = ~known & (held != 0)
        if late.any():
            recent = np.concatenate([_NONE, *(r for d in self._decided.values() for r in d)])
            late &= np.isin(roots, recent)
            self.state_failures += int(np.count_nonzero(late))
        return late

    def created(self, slots: Any, held: Any) -> None:
        """Set the held acks of trees just created at ``slots``."""
        self.pending.held[slots] = held

    def failed(self, roots: Any, slots: Any) -> None:
        """Trees failing now: held acks in them mean a rollback."""
        self.state_failures += int(np.count_nonzero(self.pending.held[slots]))
        self._decided.setdefault(self.pending.rotation, []).append(roots)

    def expired(self, slots: Any) -> None:
        """Trees the last rotation dropped: as :meth:`failed` (the spout times them out)."""
        pending = self.pending
        self.failed(pending.keys[slots], slots)
        oldest = pending.rotation - BUCKETS
        self._decided = {r: d for r, d in self._decided.items() if r > oldest}

    def prepare(self) -> None:
        """Note the trees ready now: the checkpoint being taken holds their held acks."""
        p = self.pending
        self._prepared = p.keys[(p.state == LIVE) & (p.held != 0) & (p.vals == p.held)]

    def commit(self) -> Any:
        """Let the prepared trees' held acks count; return their slots, to decide."""
        pending = self.pending
        slots = pending.find(self._prepared)
        slots = slots[slots >= 0]
        pending.vals[slots] ^= pending.held[slots]
        pending.held[slots] = 0
        self._prepared = _NONE
        return slots

    def name_stalled(self, waited: float) -> None:
        """Name the trees not ready now: a checkpoint's drain waited ``waited`` s for them.

        The driver rolls back, failing these as timed out (their own failure) and the
        rest with ``rollback``, rather than let every tree time out behind them.
        """
        reason = FailReason(
            "timeout", error=f"not complete after a checkpoint waited {waited:.1f} s for it"
        )
        for root in self.pending.keys[self._unready()].tolist():
            self.stalled[int(root)] = reason

    def _unready(self) -> Any:
        p = self.pending
        return (p.state == LIVE) & (p.tasks >= 0) & (p.vals != p.held)

    @property
    def unready(self) -> int:
        """Trees with a tuple not yet acked anywhere (a checkpoint waits for them)."""
        return int(np.count_nonzero(self._unready()))
