"""``SpoutOutputCollector``: a spout's emits, and the start of every tuple tree.

A tracked emit (a msg id, ackers > 0) draws a root id and one edge id per target task,
records the root as pending on the spout task, and tells acker task ``root mod n`` the
root, the XOR of its edges and the spout task. Those inits go out as one
``__ack_init`` batch per acker task when the spout task's superstep ends
(:meth:`SpoutOutputCollector.flush_inits`). With ackers = 0 the spout's ``ack`` runs
inside ``emit``, as in Storm.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from sparkstorm._types import MsgId
from sparkstorm.reliability.base_collector import BaseCollector
from sparkstorm.topology.declarers import DEFAULT_STREAM_ID
from sparkstorm.topology.groupings import StreamRoute
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.row_batch import U64
from sparkstorm.topology.streams import ACKER_INIT_STREAM_ID, INIT_FIELDS
from sparkstorm.topology.tuple import Tuple


class PendingTracker(Protocol):
    """The spout task's side of an emit: its pending map and untracked acks."""

    def track(self, root: int, msg_id: MsgId, stream: str) -> None:
        """Record ``root`` as pending for ``msg_id``."""

    def track_batch(self, base: int, msg_ids: list[MsgId], stream: str) -> None:
        """Record roots ``base``, ``base + 1``, ... as pending for ``msg_ids`` (a batch's rows)."""

    def ack_untracked(self, msg_id: MsgId) -> None:
        """Ack ``msg_id`` at once (ackers = 0)."""

    def committed_already(self, msg_id: MsgId) -> bool:
        """Whether ``msg_id``'s message is in committed state already (it was acked)."""


class SpoutOutputCollector(BaseCollector):
    """Emits for one spout task (Storm's ``SpoutOutputCollector``).

    Handed to ``open``; use it from ``next_tuple`` (or ``ack``/``fail``) of the same task.

    .. versionadded:: 0.1.0
    """

    def __init__(self, plan: Plan, task_id: int, tracker: PendingTracker) -> None:
        super().__init__(plan, task_id)
        self._tracker = tracker
        self._init_roots: list[int] = []
        self._init_vals: list[int] = []
        self._init_arrays: list[tuple[Any, Any]] = []
        """(roots, ack values) arrays of record batches' rows (``batch_collectors``)."""
        self._skipping = False  # after a restart, while committed messages may come again

    def emit(
        self, values: Sequence[Any], msg_id: MsgId | None = None, stream: str = DEFAULT_STREAM_ID
    ) -> list[int]:
        """Emit ``values`` on ``stream``; with a ``msg_id`` the tuple is tracked.

        Returns the target task ids. ``ack(msg_id)`` or ``fail(msg_id)`` follows later on
        this task, once the tuple's whole tree is processed, fails or times out.
        """
        if self._skipping and msg_id is not None and self._tracker.committed_already(msg_id):
            return []
        if type(values) is not list:
            values = list(values)
        route = self._routes.get(stream)
        if route is None or route.n_fields != len(values) or route.direct:
            route = self._route(stream, values, direct=False)  # raises, naming the mistake
        self._counter += 1
        targets = route.targets(values, self._counter)
        self._send(route, targets, values, msg_id)
        return targets

    def emit_direct(
        self,
        task: int,
        values: Sequence[Any],
        msg_id: MsgId | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> None:
        """Emit to one ``task``, which must subscribe to the direct ``stream``."""
        if self._skipping and msg_id is not None and self._tracker.committed_already(msg_id):
            return
        self._send(*self._direct(stream, values, task), msg_id)

    def _send(
        self, route: StreamRoute, targets: list[int], values: list[Any], msg_id: MsgId | None
    ) -> None:
        self._account(route, targets, values)
        out, fields, component, stream, task = (
            self._out,
            route.fields,
            self._component_id,
            route.stream_id,
            self._task_id,
        )
        if msg_id is None or not self._n_ackers:
            for target in targets:
                out.append((target, Tuple(values, fields, component, stream, task)))
            if msg_id is not None:
                self._tracker.ack_untracked(msg_id)
            return
        next_id = self._next_id
        root, ack_val = next_id(), 0
        for target in targets:
            edge = next_id()
            ack_val ^= edge
            out.append((target, Tuple(values, fields, component, stream, task, {root: edge})))
        self._tracker.track(root, msg_id, stream)
        self._init_roots.append(root)
        self._init_vals.append(ack_val)

    def skip_committed(self, skip: bool) -> None:
        """Drop emits of messages already in committed state (after a restart), or stop.

        Called by the spout task, never by user code.
        """
        self._skipping = skip

    def flush_inits(self) -> None:
        """Send the inits of this superstep's tracked emits, one batch per acker task."""
        parts = self._init_arrays
        if self._init_roots:
            parts.append((np.array(self._init_roots, U64), np.array(self._init_vals, U64)))
            self._init_roots, self._init_vals = [], []
        if parts:
            self._init_arrays = []
            roots, ack_vals = map(np.concatenate, zip(*parts, strict=True))
            self._batch_to_ackers(ACKER_INIT_STREAM_ID, INIT_FIELDS, roots, ack_vals, self._task_id)
