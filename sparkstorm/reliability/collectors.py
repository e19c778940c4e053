"""Bolt collectors: ``OutputCollector`` and ``BasicOutputCollector``.

Storm's ``BoltOutputCollectorImpl`` and ``BasicOutputCollector``.

The arithmetic is Storm's. ``emit`` draws one edge id per (target task, anchor with
roots), XORs it into the anchor's ``_ack_val`` and into the child's id for each root;
``ack`` sends ``edge ^ _ack_val`` per root to acker task ``root mod n``.

One difference, which the acker cannot observe: ``ack`` only appends (root, value) to
two lists; when the task's superstep ends, the values are XOR-combined per root (XOR is
associative and commutative) and travel in one ``__ack_ack`` batch per acker task. A
``fail`` or ``reset_timeout`` first flushes the acks appended so far, so per root the
acker sees messages in the order they were sent.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sparkstorm._types import FailReason
from sparkstorm.errors import InvalidTopologyError
from sparkstorm.reliability.base_collector import BaseCollector
from sparkstorm.reliability.pending_trees import xor_by_root
from sparkstorm.topology.declarers import DEFAULT_STREAM_ID
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.groupings import StreamRoute
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.streams import (
    ACK_FIELDS,
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_RESET_TIMEOUT_STREAM_ID,
    FAIL_FIELDS,
    RESET_FIELDS,
)
from sparkstorm.topology.tuple import Row, Tuple


def _mixed(superstep: int, task: int, hop: int) -> int:
    """32 well-mixed bits of (superstep, task, hop): a 64-bit multiplicative hash."""
    key = (superstep << 24) ^ (task << 8) ^ hop
    return ((key * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF) >> 32


class OutputCollector(BaseCollector):
    """Emits, acks and fails for one bolt task (Storm's ``OutputCollector``).

    Handed to ``prepare``; use it from ``execute`` on the same task only.

    .. versionadded:: 0.1.0
    """

    _ack_stream = ACKER_ACK_STREAM_ID

    def __init__(self, plan: Plan, task_id: int) -> None:
        super().__init__(plan, task_id)
        self._ack_roots: list[int] = []
        self._ack_vals: list[int] = []
        self._ack_arrays: list[tuple[Any, Any]] = []
        """Acks of a record batch's rows: (roots, values) arrays (``batch_collectors``)."""
        self._explicit = FailReason("explicit", self._component_id, task_id)
        self.acked = 0
        self.failed = 0
        self.process_secs = 0.0

    def begin(
        self, out: list[Row], next_id: Callable[[], int], now: float, superstep: int, hop: int = 0
    ) -> None:
        """As a spout's, but the shuffle counter starts afresh, from (superstep, task, hop).

        A retried Spark task then shuffles alike; the start is mixed, so a task emitting
        once a superstep (or hop) still spreads its tuples rather than following the
        superstep's parity.
        """
        super().begin(out, next_id, now, superstep, hop)
        self._counter = _mixed(superstep, self._task_id, hop)

    def emit(
        self,
        values: Sequence[Any],
        anchors: Tuple | Sequence[Tuple] | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> list[int]:
        """Emit ``values`` on ``stream`` anchored to ``anchors``; return the target tasks.

        Anchoring adds the new tuple to every tree its anchors belong to; with no
        anchors (or ``topology.acker.executors`` = 0) the tuple is unanchored.
        """
        if type(values) is not list:
            values = list(values)
        route = self._routes.get(stream)
        if route is None or route.n_fields != len(values) or route.direct:
            route = self._route(stream, values, direct=False)  # raises, naming the mistake
        if not route.subscribed and self._captured is None:
            self.emitted += 1  # nobody subscribes: counted, as Storm counts it, and dropped
            route.emitted += 1
            return []
        self._counter += 1
        targets = route.targets(values, self._counter)
        if (
            type(anchors) is Tuple
            and len(targets) == 1
            and anchors.anchors_to_ids is not None
            and len(anchors.anchors_to_ids) == 1
            and self._n_ackers
            and self._captured is None
        ):
            # the hot path (one anchor in one tree, one target), kept free of calls
            self.emitted += 1
            self.transferred += 1
            route.emitted += 1
            route.transferred += 1
            edge = self._next_id()
            anchors._ack_val ^= edge
            for root in anchors.anchors_to_ids:
                self._out.append(
                    (
                        targets[0],
                        Tuple(
                            values,
                            route.fields,
                            self._component_id,
                            stream,
                            self._task_id,
                            {root: edge},
                        ),
                    )
                )
            return targets
        self._send(route, targets, values, anchors)
        return targets

    def emit_direct(
        self,
        task: int,
        values: Sequence[Any],
        anchors: Tuple | Sequence[Tuple] | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> None:
        """Emit to one ``task``, which must subscribe to the direct ``stream``."""
        self._send(*self._direct(stream, values, task), anchors)

    def _send(
        self,
        route: StreamRoute,
        targets: list[int],
        values: list[Any],
        anchors: Tuple | Sequence[Tuple] | None,
    ) -> None:
        self._account(route, targets, values)
        if not targets:
            return
        out, fields, component, stream, task = (
            self._out,
            route.fields,
            self._component_id,
            route.stream_id,
            self._task_id,
        )
        anchor_list = (anchors,) if isinstance(anchors, Tuple) else anchors
        if not anchor_list or not self._n_ackers:
            for target in targets:
                out.append((target, Tuple(values, fields, component, stream, task)))
            return
        next_id = self._next_id
        for target in targets:
            roots: dict[int, int] = {}
            for anchor in anchor_list:
                if not isinstance(anchor, Tuple):
                    msg = (
                        f"component {component!r} anchored an emit on stream {stream!r} to "
                        f"{anchor!r}; anchors must be the Tuples it received"
                    )
                    raise InvalidTopologyError(msg, component=component, stream=stream)
                anchor_roots = anchor.anchors_to_ids
                if anchor_roots:
                    edge = next_id()
                    anchor._ack_val ^= edge
                    for root in anchor_roots:
                        roots[root] = roots.get(root, 0) ^ edge
            out.append((target, Tuple(values, fields, component, stream, task, roots or None)))

    def ack(self, tup: Tuple) -> None:
        """Mark ``tup`` processed: its edge leaves its trees, its children's edges join."""
        self.acked += 1
        received = tup.received_at
        if received:
            self.process_secs += time.time() - received
        roots = tup.anchors_to_ids
        if roots:
            ack_val = tup._ack_val
            for root, edge in roots.items():
                self._ack_roots.append(root)
                self._ack_vals.append(edge ^ ack_val)

    def fail(self, tup: Tuple) -> None:
        """Fail every tree ``tup`` belongs to, at once (the spout replays; no timeout wait)."""
        self.fail_with(tup, self._explicit)

    def fail_with(self, tup: Tuple, reason: FailReason) -> None:
        """Fail ``tup``'s trees for ``reason``: the task runner's side of :meth:`fail`.

        Called on the task's thread by the task runner (a raising ``execute``, a
        window that cannot fire) and by :meth:`fail`; never by user code.
        """
        self.failed += 1
        self.flush_acks()
        for root in tup.anchors_to_ids or ():
            self._to_acker(root, ACKER_FAIL_STREAM_ID, FAIL_FIELDS, [root, reason])

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the timeout of every tree ``tup`` belongs to (long-running work)."""
        self.flush_acks()
        for root in tup.anchors_to_ids or ():
            self._to_acker(root, ACKER_RESET_TIMEOUT_STREAM_ID, RESET_FIELDS, [root])

    def _to_acker(self, root: int, stream: str, fields: Fields, values: list[Any]) -> None:
        self._emit_system(self._acker_tasks[root % self._n_ackers], stream, fields, values)

    def ack_arrays(self, roots: Any, values: Any) -> None:
        """Acks of many (root, value) pairs at once (a record batch's rows)."""
        self._ack_arrays.append((roots, values))

    def reset_root(self, root: int) -> None:
        """Restart the timeout of tree ``root``."""
        self._to_acker(root, ACKER_RESET_TIMEOUT_STREAM_ID, RESET_FIELDS, [root])

    def flush_acks(self) -> None:
        """Send the acks appended so far, combined per root.

        The task runner calls it when the task's turn in a superstep ends; a fail or a
        reset calls it first, so that per root the acker sees messages in order.
        """
        if self._ack_roots or self._ack_arrays:
            roots = np.array(self._ack_roots, np.uint64)
            ack_vals = np.array(self._ack_vals, np.uint64)
            if self._ack_arrays:
                roots = np.concatenate([roots, *(r for r, _ in self._ack_arrays)])
                ack_vals = np.concatenate([ack_vals, *(v for _, v in self._ack_arrays)])
                self._ack_arrays.clear()
            self._ack_roots.clear()
            self._ack_vals.clear()
            roots, combined = xor_by_root(roots, ack_vals)
            self._batch_to_ackers(self._ack_stream, ACK_FIELDS, roots, combined)


class BasicOutputCollector:
    """The collector a :class:`BasicBolt` gets: every emit is anchored to the current input.

    .. versionadded:: 0.1.0
    """

    def __init__(self, collector: OutputCollector) -> None:
        self._collector = collector
        self._input: Tuple | None = None

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM_ID) -> list[int]:
        """Emit ``values`` on ``stream``, anchored to the input being executed."""
        return self._collector.emit(values, self._input, stream)

    def emit_direct(
        self, task: int, values: Sequence[Any], stream: str = DEFAULT_STREAM_ID
    ) -> None:
        """Emit to one ``task`` of a direct ``stream``, anchored to the current input."""
        self._collector.emit_direct(task, values, self._input, stream)

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the timeout of ``tup``'s trees."""
        self._collector.reset_timeout(tup)

    def report_error(self, error: BaseException) -> None:
        """Record an error for this task; processing goes on."""
        self._collector.report_error(error)
