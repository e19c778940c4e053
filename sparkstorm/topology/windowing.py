"""Windowed bolts: Storm's ``BaseWindowedBolt``, ``TupleWindow``, ``Count`` and ``Duration``.

A windowed bolt gets windows of tuples, not tuples: tumbling or sliding, by count or
duration, on processing time (topology time at arrival) or on event time (a timestamp
field, with watermarks and an allowed lag). What it emits without anchors is anchored
to every tuple of the window, and each input is acked once it has left every window it
can be in, as in Storm. See docs/reliability.md, "Windows".
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

from sparkstorm.config import TOPOLOGY_TICK_TUPLE_FREQ_SECS
from sparkstorm.topology.components import Bolt, _StatefulHooks
from sparkstorm.topology.tuple import Tuple

LATE_TUPLE_FIELD = "tuple"
"""The one field of the late-tuple stream: the late input tuple itself (Storm's too)."""
WATERMARK_INTERVAL_SECS = 1.0
"""How often watermarks advance on event time (Storm's default, 1000 ms)."""


@dataclass(frozen=True)
class Count:
    """A window length or sliding interval in tuples (Storm's ``BaseWindowedBolt.Count``)."""

    value: int

    def __post_init__(self) -> None:
        if not isinstance(self.value, int) or isinstance(self.value, bool) or self.value <= 0:
            msg = f"Count({self.value!r}): a window count is a positive int"
            raise ValueError(msg)


@dataclass(frozen=True)
class Duration:
    """A window length, sliding interval or lag in seconds (Storm's ``Duration``).

    ``Duration(1.5)``, or ``Duration.of_millis(1500)`` as in Storm.
    """

    secs: float

    def __post_init__(self) -> None:
        if not isinstance(self.secs, int | float) or not self.secs >= 0:
            msg = f"Duration({self.secs!r}): a duration is a number of seconds >= 0"
            raise ValueError(msg)

    @classmethod
    def of_millis(cls, ms: float) -> Duration:
        """``ms`` milliseconds."""
        return cls(ms / 1000)

    @classmethod
    def seconds(cls, secs: float) -> Duration:
        """``secs`` seconds."""
        return cls(secs)

    @classmethod
    def minutes(cls, minutes: float) -> Duration:
        """``minutes`` minutes."""
        return cls(minutes * 60)


Length = Count | Duration


class TupleWindow:
    """The tuples of one window, and how it differs from the window before.

    .. versionadded:: 0.2.0
    """

    def __init__(
        self,
        tuples: list[Tuple],
        new: list[Tuple],
        expired: list[Tuple],
        start_timestamp: float | None,
        end_timestamp: float,
    ) -> None:
        self._tuples, self._new, self._expired = tuples, new, expired
        self.start_timestamp = start_timestamp
        """The window's start (exclusive): event time, or topology time; None for a count
        window."""
        self.end_timestamp = end_timestamp
        """The window's end (inclusive): the watermark's window end on event time, the
        trigger's topology time otherwise."""

    def get(self) -> list[Tuple]:
        """Every tuple in the window, oldest first."""
        return self._tuples

    def get_new(self) -> list[Tuple]:
        """The tuples that arrived since the last window."""
        return self._new

    def get_expired(self) -> list[Tuple]:
        """The tuples of the last window that are not in this one (already acked)."""
        return self._expired

    def __iter__(self) -> Any:
        return iter(self._tuples)

    def __len__(self) -> int:
        return len(self._tuples)

    def __repr__(self) -> str:
        return (
            f"TupleWindow({len(self._tuples)} tuples, {len(self._new)} new, "
            f"{len(self._expired)} expired, end {self.end_timestamp!r})"
        )


class WindowedBolt(Bolt):
    """A bolt that processes windows of tuples (Storm's ``BaseWindowedBolt``).

    Configure it with the ``with_*`` methods (each returns the bolt), then implement
    :meth:`execute` over a :class:`TupleWindow`::

        class Average(WindowedBolt):
            def prepare(self, conf, context, collector):
                self.collector = collector

            def execute(self, window):
                values = [t["value"] for t in window.get()]
                self.collector.emit([sum(values) / len(values)])  # anchored to the window

        builder.set_bolt("avg", Average().with_window(Duration(10), Duration(2)))

    Inputs are acked by the runtime once they left every window they can be in; do not
    ack them yourself. An exception in ``execute`` fails the window's tuples.

    .. versionadded:: 0.2.0
    """

    window_length: Length | None = None
    sliding_interval: Length | None = None
    timestamp_field: str | None = None
    lag: Duration = Duration(0)
    watermark_interval: Duration = Duration(WATERMARK_INTERVAL_SECS)
    late_tuple_stream: str | None = None

    def with_window(self, length: Length, sliding_interval: Length | None = None) -> WindowedBolt:
        """A window of ``length`` that slides by ``sliding_interval``.

        Each is a :class:`Count` or a :class:`Duration`; without an interval the window
        slides by one tuple, as Storm's does.
        """
        self.window_length = _length(length, "window length")
        self.sliding_interval = (
            Count(1) if sliding_interval is None else _length(sliding_interval, "interval")
        )
        return self

    def with_tumbling_window(self, length: Length) -> WindowedBolt:
        """Back-to-back windows of ``length``: each tuple is in exactly one."""
        self.window_length = self.sliding_interval = _length(length, "window length")
        return self

    def with_timestamp_field(self, name: str) -> WindowedBolt:
        """Event time: the window by the tuples' ``name`` field (seconds, e.g. ``time.time()``)."""
        self.timestamp_field = name
        return self

    def with_lag(self, lag: Duration) -> WindowedBolt:
        """How far out of order event times may arrive before a tuple is late."""
        if not isinstance(lag, Duration):
            msg = f"the lag is {lag!r}; give a Duration(secs)"
            raise ValueError(msg)
        self.lag = lag
        return self

    def with_watermark_interval(self, interval: Duration) -> WindowedBolt:
        """How often the watermark advances and due windows fire (event time)."""
        if not isinstance(interval, Duration) or interval.secs <= 0:
            msg = f"the watermark interval is {interval!r}; give a Duration(secs) > 0"
            raise ValueError(msg)
        self.watermark_interval = interval
        return self

    def with_late_tuple_stream(self, stream: str) -> WindowedBolt:
        """Emit late tuples (event time before the watermark) on ``stream``.

        The stream's one field, ``tuple``, is the late tuple; declare the stream. Without
        one, late tuples are acked, counted (``late_tuples``) and reported, not processed.
        """
        self.late_tuple_stream = stream
        return self

    @abstractmethod
    def execute(self, window: TupleWindow) -> None:  # type: ignore[override]
        """Process one window; emits without anchors are anchored to its tuples."""

    def get_component_configuration(self) -> dict[str, Any] | None:
        """Ticks drive duration windows and watermarks: at the interval they need."""
        interval = self.tick_secs()
        return None if interval is None else {TOPOLOGY_TICK_TUPLE_FREQ_SECS: interval}

    def tick_secs(self) -> float | None:
        """How often the window needs a tick (None: a count window on processing time)."""
        if self.timestamp_field is not None:
            return self.watermark_interval.secs
        if isinstance(self.sliding_interval, Duration):
            return self.sliding_interval.secs
        return None


class StatefulWindowedBolt(_StatefulHooks, WindowedBolt):
    """A windowed bolt whose windows and state are checkpointed.

    Storm's ``BaseStatefulWindowedBolt`` with ``withPersistence``. Keep state across
    windows in the :class:`~sparkstorm.KeyValueState` handed to ``init_state``. The
    tuples waiting in the windows are saved with every checkpoint, beside that state, so:

    - an input is acked when it arrives, and completes at the next commit: its tree does
      not wait for the window, so the window may be longer than
      ``topology.message.timeout.secs`` and hold more than ``topology.max.spout.pending``;
    - it can run in a topology with stateful bolts (a plain windowed bolt cannot);
    - a failure anywhere rolls the windows back with every stateful task, and what was
      not committed replays: each message is in exactly one committed window (tumbling)
      and each window's effect on the state counts once.

    As in Storm, what ``execute`` emits is not anchored (the inputs' trees complete at
    commits, not with windows): outputs are not replayed if lost downstream, and a
    window evaluated again after a rollback emits again. An exception in ``execute``
    rolls back, as a Storm worker dying there replays from the checkpoint. The store's
    serializer must be ``pickle`` (the default).

    .. versionadded:: 0.2.0
    """


def _length(value: Any, what: str) -> Length:
    if not isinstance(value, Count | Duration) or (isinstance(value, Duration) and value.secs <= 0):
        msg = f"the {what} is {value!r}; give Count(n) or Duration(secs) (a duration > 0)"
        raise ValueError(msg)
    return value


def is_windowed(obj: object) -> bool:
    """Whether ``obj`` is a windowed bolt (its tasks run a window manager)."""
    return isinstance(obj, WindowedBolt)
