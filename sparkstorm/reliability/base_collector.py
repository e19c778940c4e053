"""What both collectors share, and the side of them that engines and task runners use.

``BaseCollector`` holds a task's routes, output list, id source, counters and error
throttle (Storm's ``OutputCollector`` and ``SpoutOutputCollector`` share the same through
``ExecutorTransfer`` and ``ErrorReportingMetrics``). :class:`TaskSide` names the few
methods a task runner or an engine calls on a collector: users never call them, and
nothing outside ``reliability/`` touches a collector's private members.
"""

from __future__ import annotations

import random
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from sparkstorm.config import (
    SPARKSTORM_SIMULATED_TIME,
    TOPOLOGY_ERROR_THROTTLE_INTERVAL_SECS,
    TOPOLOGY_MAX_ERROR_REPORT_PER_INTERVAL,
)
from sparkstorm.errors import InvalidTopologyError, TopologyHalted
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.groupings import StreamRoute
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.storm_time import simulate
from sparkstorm.topology.tuple import Row, Tuple


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
    recovered: bool = False
    """Something the engine recovered from (a lost superstep or worker): shown and
    logged as a warning, not a failure of the run."""
    halts: bool = False
    """A :class:`~sparkstorm.errors.TopologyHalted`: the run stops on it."""


class TaskSide(Protocol):
    """What a task runner or an engine calls on a task's collector; user code never does.

    Called on the task's own thread, between the user's calls: ``begin`` before the
    task's turn in a superstep (or, in a continuous engine, a batch), ``hand_over``
    after it.
    """

    def begin(
        self, out: list[Row], next_id: Callable[[], int], now: float, superstep: int, hop: int = 0
    ) -> None:
        """Send emits to ``out`` with ids from ``next_id`` at topology time ``now``."""

    def capture(self, into: Captured | None) -> None:
        """Record (component, stream, values) of every user emit in ``into`` (None: stop)."""

    def hand_over(self, errors: list[ReportedError], debug: list[str]) -> None:
        """Move the errors reported and the debug lines noted into the lists."""


Captured = list[tuple[str, str, list[Any]]]
"""(component, stream, values) of every user emit, when the topology is captured."""


class Notes(list[str]):
    """A task's debug lines; a ``share`` of its calls are noted (Storm's sampling %)."""

    def __init__(self, share: float = 1.0) -> None:
        super().__init__()
        self.share = share

    def sampled(self) -> bool:
        """Whether to note this call."""
        return self.share >= 1.0 or random.random() < self.share


class BaseCollector:
    """What both collectors share: routes, output rows, ids, counters, errors.

    Implements :class:`TaskSide`; the user-facing methods are the subclasses'.
    """

    debug: Notes | None = None
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
        self._simulated = bool(plan.conf.get(SPARKSTORM_SIMULATED_TIME))
        self._counter = task_id
        self._captured: Captured | None = None
        self.errors: list[ReportedError] = []
        self._throttle = ErrorThrottle(
            plan.conf[TOPOLOGY_MAX_ERROR_REPORT_PER_INTERVAL],
            plan.conf[TOPOLOGY_ERROR_THROTTLE_INTERVAL_SECS],
        )
        self.emitted = 0
        self.transferred = 0
        self.batches = 0
        """Record batches emitted (an Arrow component's; ``emitted`` counts their rows)."""

    def begin(
        self, out: list[Row], next_id: Callable[[], int], now: float, superstep: int, hop: int = 0
    ) -> None:
        """Point the collector at this superstep's output list, ids and clock.

        The shuffle counter runs on (round robin, as Storm's shuffle): a spout task is
        never retried. A bolt's starts afresh (``OutputCollector.begin``).
        """
        self._out = out
        self._next_id = next_id
        self._now = now
        simulate(now if self._simulated else None)  # a reused worker may have simulated

    def send_to(self, out: list[Row]) -> None:
        """Send the emits from now on to ``out`` (ids and clock unchanged)."""
        self._out = out

    def capture(self, into: Captured | None) -> None:
        """Record (component, stream, values) of every user emit in ``into`` (None: stop)."""
        self._captured = into

    @property
    def component_id(self) -> str:
        """The component whose task this collector serves."""
        return self._component_id

    @property
    def task_id(self) -> int:
        """The task this collector serves."""
        return self._task_id

    @property
    def now(self) -> float:
        """Topology time of the task's current turn (seconds since submit)."""
        return self._now

    def stream_counts(self) -> dict[str, list[int]]:
        """Emitted and transferred per stream this task emitted on (Storm UI's output stats)."""
        return {sid: [r.emitted, r.transferred] for sid, r in self._routes.items() if r.emitted}

    def restore_stream_counts(self, counts: dict[str, list[int]]) -> None:
        """Continue the per-stream counters from ``counts`` (a task restored from a snapshot)."""
        for sid, (emitted, transferred) in counts.items():
            route = self._routes[sid]
            route.emitted, route.transferred = emitted, transferred

    def hand_over(self, errors: list[ReportedError], debug: list[str]) -> None:
        """Move the errors reported and the ``topology.debug`` lines noted into the lists."""
        if self.errors:
            errors.extend(self.errors)
            self.errors.clear()
        if self.debug is not None:
            debug.extend(self.debug)
            self.debug.clear()
            if self.debug.share <= 0:  # debug turned off: these were the last lines
                self.debug = None

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
    ) -> tuple[StreamRoute, list[int], list[Any]]:
        """Route, the one target and the values of an ``emit_direct``, checked."""
        values = values if type(values) is list else list(values)
        route = self._route(stream, values, direct=True)
        return route, self._direct_target(route, task), values

    def _account(self, route: StreamRoute, targets: list[int], values: list[Any]) -> None:
        """Count one emit and its transfers; record it when the component is captured."""
        self.emitted += 1
        self.transferred += len(targets)
        route.emitted += 1
        route.transferred += len(targets)
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
        halts = isinstance(error, TopologyHalted)
        if verdict is ErrorThrottle.COUNT:
            for i in range(len(self.errors) - 1, -1, -1):
                if self.errors[i].message == text:
                    self.errors[i] = replace(self.errors[i], count=self.errors[i].count + 1)
                    return
            self.errors.append(ReportedError(*where, throttled=True, halts=halts))
        elif verdict is ErrorThrottle.LOG_FIRST and error.__traceback__ is not None:
            trace = users_traceback(error)
            self.errors.append(ReportedError(*where, traceback=trace, halts=halts))
        else:
            self.errors.append(ReportedError(*where, halts=halts))


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


class ErrorThrottle:
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
