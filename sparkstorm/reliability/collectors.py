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

import logging
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sparkstorm._types import FailReason
from sparkstorm.config import (
    TOPOLOGY_ERROR_THROTTLE_INTERVAL_SECS,
    TOPOLOGY_MAX_ERROR_REPORT_PER_INTERVAL,
)
from sparkstorm.errors import InvalidTopologyError
from sparkstorm.reliability.pending_trees import group_by_root
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

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReportedError:
    """An error a task reported or raised, with where and when (Storm UI's "Last error").

    ``count`` is how many times it happened: repeats beyond Storm's throttle
    (``topology.max.error.report.per.interval`` per
    ``topology.error.throttle.interval.secs``, per task) are counted, not kept. Records
    travel to the driver, which logs them (a Spark worker's own output would land in
    the terminal between the lines of the live table).
    """

    component: str
    task: int
    time: float
    message: str
    count: int = 1
    traceback: str = ""
    """The user's traceback, kept for an error's first occurrence in a task."""
    throttled: bool = False
    """Repeats counted under the throttle: the driver does not log them."""


def _mixed(superstep: int, task: int, hop: int) -> int:
    """32 well-mixed bits of (superstep, task, hop): a 64-bit multiplicative hash."""
    key = (superstep << 24) ^ (task << 8) ^ hop
    return ((key * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF) >> 32


class _Emitter:
    """What both collectors share: routes, output rows, ids, counters, errors."""

    debug: list[str] | None = None
    """With ``topology.debug``, a line per emit, ack and fail (see ``reliability/debug.py``)."""

    def __init__(self, plan: Plan, task_id: int) -> None:
        self._component_id = plan.task_component[task_id]
        self._task_id = task_id
        self._routes: dict[str, StreamRoute] = (
            plan.routes(self._component_id, task_id)
            if self._component_id in plan.components
            else {}
        )
        self._acker_tasks = plan.acker_tasks
        self._n_ackers = len(plan.acker_tasks)
        self._out: list[Row] = []
        self._next_id: Callable[[], int] = lambda: 0
        self._now = 0.0
        self._counter = task_id
        self._captured: list[tuple[str, str, list[Any]]] | None = None
        self.errors: list[ReportedError] = []
        self._throttle = _ErrorThrottle(
            plan.conf[TOPOLOGY_MAX_ERROR_REPORT_PER_INTERVAL],
            plan.conf[TOPOLOGY_ERROR_THROTTLE_INTERVAL_SECS],
        )
        self.emitted = 0
        self.transferred = 0

    def _begin(
        self, out: list[Row], next_id: Callable[[], int], now: float, superstep: int, hop: int = 0
    ) -> None:
        """Point the collector at this superstep's output list, ids and clock.

        The shuffle counter runs on (round robin, as Storm's shuffle): a spout runs on the
        driver and is never retried. A bolt's starts afresh (``OutputCollector._begin``).
        """
        self._out = out
        self._next_id = next_id
        self._now = now

    def hand_over(self, errors: list[ReportedError], debug: list[str]) -> None:
        """Move the errors reported and the ``topology.debug`` lines noted into the lists."""
        if self.errors:
            errors.extend(self.errors)
            self.errors.clear()
        if self.debug:
            debug.extend(self.debug)
            self.debug.clear()

    def _route(self, stream: str, values: Sequence[Any], direct: bool) -> StreamRoute:
        route = self._routes.get(stream)
        if route is None:
            msg = (
                f"component {self._component_id!r} emitted to stream {stream!r}, which it "
                f"does not declare (declared: {sorted(self._routes)}); declare it in "
                f"declare_output_fields"
            )
            raise InvalidTopologyError(msg, component=self._component_id, stream=stream)
        if len(values) != route.n_fields:
            msg = (
                f"component {self._component_id!r} emitted {len(values)} value(s) "
                f"{list(values)!r} on stream {stream!r}, which declares {route.n_fields} "
                f"field(s) {route.fields.to_list()}"
            )
            raise InvalidTopologyError(msg, component=self._component_id, stream=stream)
        if route.direct != direct:
            how = "emit_direct" if route.direct else "emit"
            msg = (
                f"component {self._component_id!r} used "
                f"{'emit_direct' if direct else 'emit'} on stream {stream!r}, which is "
                f"{'' if route.direct else 'not '}a direct stream; use {how}"
            )
            raise InvalidTopologyError(msg, component=self._component_id, stream=stream)
        return route

    def _direct(
        self, stream: str, values: Sequence[Any], task: int
    ) -> tuple[StreamRoute, list[Any], list[int]]:
        """Route, values and the one target of an ``emit_direct``, checked."""
        values = values if type(values) is list else list(values)
        route = self._route(stream, values, direct=True)
        return route, values, self._direct_target(route, task)

    def _account(self, route: StreamRoute, targets: list[int], values: list[Any]) -> None:
        """Count one emit and its transfers; record it when the component is captured."""
        self.emitted += 1
        self.transferred += len(targets)
        if self._captured is not None:
            self._captured.append((self._component_id, route.stream_id, values))

    def _direct_target(self, route: StreamRoute, task: int) -> list[int]:
        if task not in route.direct_tasks:
            msg = (
                f"component {self._component_id!r} emitted directly to task {task!r} on "
                f"stream {route.stream_id!r}, but that task does not subscribe to it with "
                f"direct_grouping (subscribed tasks: {sorted(route.direct_tasks)})"
            )
            raise InvalidTopologyError(msg, component=self._component_id, stream=route.stream_id)
        return [task]

    def _emit_system(self, task: int, stream: str, fields: Fields, values: list[Any]) -> None:
        self._out.append((task, Tuple(values, fields, self._component_id, stream, self._task_id)))

    def _batch_to_ackers(
        self,
        stream: str,
        fields: Fields,
        roots: NDArray[np.uint64],
        ack_vals: NDArray[np.uint64],
        *extra: Any,
    ) -> None:
        """Send one init or ack batch to each acker task that owns some of ``roots``."""
        if self._n_ackers == 1:
            self._emit_system(self._acker_tasks[0], stream, fields, [roots, ack_vals, *extra])
            return
        owner = roots % np.uint64(self._n_ackers)  # Storm: acker task = root mod n
        for i, task in enumerate(self._acker_tasks):
            mine = owner == i
            if mine.any():
                self._emit_system(task, stream, fields, [roots[mine], ack_vals[mine], *extra])

    def report_error(self, error: BaseException) -> None:
        """Record an error for this task (shown in statistics and logs); processing goes on.

        As Storm throttles error reports, a task records at most
        ``topology.max.error.report.per.interval`` errors per interval for the driver to
        log, each distinct one with its traceback the first time only; the rest are
        counted on the last record of the same error.
        """
        text = "".join(traceback.format_exception_only(type(error), error)).strip()
        verdict = self._throttle.admit(text, self._now)
        where = (self._component_id, self._task_id, self._now, text)
        if verdict is _ErrorThrottle.COUNT:
            for i in range(len(self.errors) - 1, -1, -1):
                if self.errors[i].message == text:
                    self.errors[i] = replace(self.errors[i], count=self.errors[i].count + 1)
                    return
            self.errors.append(ReportedError(*where, throttled=True))
        elif verdict is _ErrorThrottle.LOG_FIRST and error.__traceback__ is not None:
            self.errors.append(ReportedError(*where, traceback=users_traceback(error)))
        else:
            self.errors.append(ReportedError(*where))


_OWN_FILES = str(Path(__file__).resolve().parents[1])


def users_traceback(error: BaseException) -> str:
    """The error's traceback without sparkstorm's own frames: where the user's code raised."""
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not frame.filename.startswith(_OWN_FILES)
    ]
    head = "Traceback (most recent call last):\n" if frames else ""
    body = "".join(traceback.format_list(frames))
    return (head + body + "".join(traceback.format_exception_only(type(error), error))).strip()


class _ErrorThrottle:
    """Storm's error throttle for one task: ``limit`` logged errors per ``interval`` s."""

    LOG_FIRST, LOG, COUNT = "log first", "log", "count"

    def __init__(self, limit: int, interval: float) -> None:
        self.limit, self.interval = limit, interval
        self._window, self._logged = -1, 0
        self._seen: set[str] = set()

    def admit(self, text: str, now: float) -> str:
        """Whether to log ``text`` (the first time with its traceback) or only count it."""
        window = int(now // self.interval)
        if window != self._window:
            self._window, self._logged = window, 0
        if self._logged >= self.limit:
            return self.COUNT
        self._logged += 1
        if text in self._seen:
            return self.LOG
        self._seen.add(text)
        return self.LOG_FIRST


class OutputCollector(_Emitter):
    """Emits, acks and fails for one bolt task (Storm's ``OutputCollector``).

    Handed to ``prepare``; use it from ``execute`` on the same task only.

    .. versionadded:: 0.1.0
    """

    _ack_stream = ACKER_ACK_STREAM_ID

    def __init__(self, plan: Plan, task_id: int) -> None:
        super().__init__(plan, task_id)
        self._ack_roots: list[int] = []
        self._ack_vals: list[int] = []
        self._explicit = FailReason("explicit", self._component_id, task_id)
        self.acked = 0
        self.failed = 0
        self.process_secs = 0.0

    def _begin(
        self, out: list[Row], next_id: Callable[[], int], now: float, superstep: int, hop: int = 0
    ) -> None:
        """As a spout's, but the shuffle counter starts afresh, from (superstep, task, hop).

        A retried Spark task then shuffles alike; the start is mixed, so a task emitting
        once a superstep (or hop) still spreads its tuples rather than following the
        superstep's parity.
        """
        super()._begin(out, next_id, now, superstep, hop)
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
            return []
        self._counter += 1
        targets = route.targets(values, self._counter)
        if (
            type(anchors) is Tuple
            and len(targets) == 1
            and anchors._roots is not None
            and len(anchors._roots) == 1
            and self._n_ackers
            and self._captured is None
        ):
            # the hot path (one anchor in one tree, one target), kept free of calls
            self.emitted += 1
            self.transferred += 1
            edge = self._next_id()
            anchors._ack_val ^= edge
            for root in anchors._roots:
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
                anchor_roots = anchor._roots
                if anchor_roots:
                    edge = next_id()
                    anchor._ack_val ^= edge
                    for root in anchor_roots:
                        roots[root] = roots.get(root, 0) ^ edge
            out.append((target, Tuple(values, fields, component, stream, task, roots or None)))

    def ack(self, tup: Tuple) -> None:
        """Mark ``tup`` processed: its edge leaves its trees, its children's edges join."""
        self.acked += 1
        received = tup._received
        if received:
            self.process_secs += time.time() - received
        roots = tup._roots
        if roots:
            ack_val = tup._ack_val
            for root, edge in roots.items():
                self._ack_roots.append(root)
                self._ack_vals.append(edge ^ ack_val)

    def fail(self, tup: Tuple) -> None:
        """Fail every tree ``tup`` belongs to, at once (the spout replays; no timeout wait)."""
        self._fail(tup, self._explicit)

    def _fail(self, tup: Tuple, reason: FailReason) -> None:
        self.failed += 1
        self._flush_acks()
        for root in tup._roots or ():
            self._to_acker(root, ACKER_FAIL_STREAM_ID, FAIL_FIELDS, [root, reason])

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the timeout of every tree ``tup`` belongs to (long-running work)."""
        self._flush_acks()
        for root in tup._roots or ():
            self._to_acker(root, ACKER_RESET_TIMEOUT_STREAM_ID, RESET_FIELDS, [root])

    def _to_acker(self, root: int, stream: str, fields: Fields, values: list[Any]) -> None:
        self._emit_system(self._acker_tasks[root % self._n_ackers], stream, fields, values)

    def _flush_acks(self) -> None:
        """Send the acks appended so far, combined per root.

        The task runner calls it when the superstep ends; a fail or reset calls it first.
        """
        if self._ack_roots:
            roots = np.array(self._ack_roots, np.uint64)
            ack_vals = np.array(self._ack_vals, np.uint64)
            self._ack_roots.clear()
            self._ack_vals.clear()
            order, starts = group_by_root(roots)
            combined = np.bitwise_xor.reduceat(ack_vals[order], starts)
            self._batch_to_ackers(self._ack_stream, ACK_FIELDS, roots[order][starts], combined)


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
