"""Running a windowed bolt task: the window manager (Storm's ``WindowedBoltExecutor``).

Tuples wait in ``buffer`` with their timestamp: the topology time of their arrival, or
on event time their timestamp field. A window fires every sliding interval: after so
many tuples (a count interval), on the bolt's tick (a duration interval, ticking at
that interval), or on event time when the watermark passes a window's end (windows end
at multiples of the interval, or at every n-th event by timestamp for a count interval;
the watermark is the smallest, over the input streams, of the greatest timestamp seen,
minus the lag, advanced on each tick). After a window fires, the tuples that cannot be
in any later one leave the buffer and are acked (Storm acks them at the next trigger;
leaving earlier completes their trees a window sooner), and they are the next window's
``get_expired()``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from sparkstorm._types import SHUTDOWN, FailReason
from sparkstorm.config import (
    TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS,
    TOPOLOGY_MAX_SPOUT_PENDING,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    provider_config,
)
from sparkstorm.errors import InvalidTopologyError
from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.topology.components import Bolt, is_stateful
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import DEFAULT_STREAM_ID
from sparkstorm.topology.streams import CHECKPOINT_STREAM_ID, SYSTEM_COMPONENT_ID
from sparkstorm.topology.tuple import Tuple
from sparkstorm.topology.windowing import Count, Duration, TupleWindow, WindowedBolt

if TYPE_CHECKING:
    from sparkstorm.state.key_value import KeyValueState
    from sparkstorm.tasks.metrics import TaskStats


class WindowedOutputCollector:
    """A windowed bolt's collector: an emit without anchors is anchored to the window."""

    def __init__(self, collector: OutputCollector) -> None:
        self._collector = collector
        self.window: list[Tuple] = []

    def emit(self, values: Any, anchors: Any = None, stream: str = DEFAULT_STREAM_ID) -> list[int]:
        """Emit ``values``, anchored to ``anchors`` or else to the window's tuples."""
        return self._collector.emit(values, self.window if anchors is None else anchors, stream)

    def emit_direct(
        self, task: int, values: Any, anchors: Any = None, stream: str = DEFAULT_STREAM_ID
    ) -> None:
        """Emit to ``task``, anchored to ``anchors`` or else to the window's tuples."""
        self._collector.emit_direct(
            task, values, self.window if anchors is None else anchors, stream
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_collector":  # unpickling: not set yet
            raise AttributeError(name)
        return getattr(self._collector, name)


class WindowedBoltExecutor(Bolt):
    """Runs a :class:`WindowedBolt` (``delegate``) over windows of its inputs."""

    def __init__(self, delegate: WindowedBolt) -> None:
        self.delegate = delegate
        self.length, self.slide = delegate.window_length, delegate.sliding_interval
        self.field = delegate.timestamp_field
        self.buffer: list[tuple[float, Tuple]] = []
        self.expired: list[Tuple] = []  # left the buffer since the last window
        self.fresh: list[Tuple] = []  # arrived since the last window
        self.arrived = 0  # since the last window (count intervals)
        self.stream_max: dict[tuple[str, str], float] = {}
        self.watermark = -math.inf
        self.last_end: float | None = None
        self.passed = 0  # buffered events the watermark passed (event time, count interval)
        self.late = 0

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Prepare the bolt with a collector that anchors to the window."""
        self.collector = collector
        self.windowed = WindowedOutputCollector(collector)
        self.delegate.prepare(conf, context, self.windowed)  # type: ignore[arg-type]

    def report_stats(self, stats: TaskStats) -> None:
        """Copy the count of late tuples into the task's statistics."""
        stats.late_tuples = self.late

    def execute(self, tup: Tuple) -> None:
        """Add an input to the buffer, or fire what is due on a tick."""
        now = self.collector.now
        if (
            tup.source_stream == CHECKPOINT_STREAM_ID
            and tup.source_component == SYSTEM_COMPONENT_ID
        ):
            self._stop()  # the topology is stopping: no window will come for what is held
            return
        if tup.is_tick():
            if self.field is not None:
                self._advance_watermark()
            elif isinstance(self.slide, Duration):
                self._fire_at(now)
            return
        if self.field is None:
            ts = now
        else:
            ts = self._event_time(tup)
            if ts < self.watermark:
                self._late(tup, ts)
                return
            stream = (tup.source_component, tup.source_stream)
            self.stream_max[stream] = max(ts, self.stream_max.get(stream, ts))
        self._add(ts, tup)
        if isinstance(self.slide, Count) and self.field is None:
            self.arrived += 1
            if self.arrived >= self.slide.value:
                self.arrived = 0
                self._fire_at(now)

    def _add(self, ts: float, tup: Tuple) -> None:
        self.buffer.append((ts, tup))
        self.fresh.append(tup)

    def _event_time(self, tup: Tuple) -> float:
        try:
            return float(tup[self.field])  # type: ignore[index]
        except (KeyError, ValueError, TypeError, IndexError) as exc:
            msg = (
                f"windowed bolt {self.collector.component_id!r}: the timestamp field "
                f"{self.field!r} of a tuple from {tup.source_component!r} stream "
                f"{tup.source_stream!r} is not a number of seconds ({exc!r}); "
                f"fields: {list(tup.fields)}"
            )
            raise ValueError(msg) from exc

    def _late(self, tup: Tuple, ts: float) -> None:
        """A tuple older than the watermark: on the late stream, or reported; then acked."""
        self.late += 1
        stream = self.delegate.late_tuple_stream
        if stream is not None:
            self.collector.emit([tup], tup, stream)
        elif self.late == 1 or self.late % 1000 == 0:
            self.collector.report_error(
                ValueError(
                    f"windowed bolt {self.collector.component_id!r}: {self.late} late "
                    f"tuple(s) so far (event time {ts} < watermark {self.watermark}) were "
                    f"acked without being in a window; give it with_late_tuple_stream(...) "
                    f"to process them, or with_lag(...) to wait longer"
                )
            )
        self.collector.ack(tup)

    def _stop(self) -> None:
        """Fail what the windows hold with ``shutdown``: its spouts replay it after."""
        for _, tup in self.buffer:
            self.collector.fail_with(tup, SHUTDOWN)
        self.buffer, self.fresh, self.arrived = [], [], 0

    def _fire_at(self, now: float) -> None:
        """Processing time: the window ending now, then drop what no later one can hold."""
        length = self.length
        if isinstance(length, Count):
            window, start = [t for _, t in self.buffer[-length.value :]], None
            keep = length.value - (self.slide.value if isinstance(self.slide, Count) else 0)
            self._fire(window, start, now)
            self._drop(len(self.buffer) - max(keep, 0))
        else:
            assert length is not None
            start = now - length.secs
            self._fire([t for ts, t in self.buffer if ts > start], start, now)
            # the next window starts after now + interval - length (a count interval: now)
            step = self.slide.secs if isinstance(self.slide, Duration) else 0.0
            self._drop(sum(1 for ts, _ in self.buffer if ts <= now + step - length.secs))

    def _advance_watermark(self) -> None:
        """Event time: fire every window that ends at or before the new watermark."""
        if not self.stream_max:
            return
        watermark = min(self.stream_max.values()) - self.delegate.lag.secs
        if watermark <= self.watermark:
            return
        self.watermark = watermark
        self.buffer.sort(key=lambda entry: entry[0])  # oldest event first (a stable sort)
        if isinstance(self.slide, Count):
            self._count_triggers(watermark)
        elif isinstance(self.length, Count):
            self._time_triggers_of_count_windows(watermark)
        else:
            self._time_triggers(watermark)

    def _time_triggers(self, watermark: float) -> None:
        """Duration windows on event time: each ending at a multiple of the interval."""
        length, slide = self.length.secs, self.slide.secs  # type: ignore[union-attr]
        while self.buffer:
            first = min(ts for ts, _ in self.buffer)
            end = math.ceil(first / slide) * slide
            if self.last_end is not None:
                end = max(end, self.last_end + slide)
            if end > watermark:
                return
            self._fire([t for ts, t in self.buffer if end - length < ts <= end], end - length, end)
            self.last_end = end
            self._drop(sum(1 for ts, _ in self.buffer if ts <= end + slide - length))

    def _count_triggers(self, watermark: float) -> None:
        """A count interval on event time: a window every ``n`` events the watermark passed.

        Storm's watermark count trigger. Events are taken in timestamp order; a window
        ends at every n-th of them, and holds the last ``length`` events up to it (a
        count length) or those within ``length`` seconds of its timestamp.
        """
        slide = self.slide.value  # type: ignore[union-attr]
        buffer = self.buffer
        while self.passed < len(buffer) and buffer[self.passed][0] <= watermark:
            self.passed += 1
            self.arrived += 1
            if self.arrived < slide:
                continue
            self.arrived = 0
            end = buffer[self.passed - 1][0]
            if isinstance(self.length, Count):
                first = max(0, self.passed - self.length.value)
                start, keep_from = None, self.passed + slide - self.length.value
            else:
                assert self.length is not None
                start = end - self.length.secs
                first = keep_from = sum(1 for ts, _ in buffer[: self.passed] if ts <= start)
            self._fire([t for _, t in buffer[first : self.passed]], start, end)
            dropped = min(max(keep_from, 0), self.passed)
            self._drop(dropped)
            self.passed -= dropped
            buffer = self.buffer

    def _time_triggers_of_count_windows(self, watermark: float) -> None:
        """A count length and a duration interval on event time.

        Storm's watermark time trigger with a count eviction: at each multiple of the
        interval after new events, the last ``length`` events up to it.
        """
        slide, count = self.slide.secs, self.length.value  # type: ignore[union-attr]
        while True:
            later = [ts for ts, _ in self.buffer if self.last_end is None or ts > self.last_end]
            if not later:
                return
            end = math.ceil(later[0] / slide) * slide
            if end > watermark:
                return
            upto = sum(1 for ts, _ in self.buffer if ts <= end)
            self._fire([t for _, t in self.buffer[max(0, upto - count) : upto]], None, end)
            self.last_end = end
            self._drop(upto - count)

    def _fire(self, window: list[Tuple], start: float | None, end: float) -> None:
        if not window and not self.expired:
            return
        fresh = {id(t) for t in self.fresh}
        new = [t for t in window if id(t) in fresh]
        self.windowed.window = window if self.anchors_to_window else []
        try:
            self.delegate.execute(TupleWindow(window, new, self.expired, start, end))
        except Exception as exc:
            self.collector.report_error(exc)
            self._fail_window(window, exc)
            window = []
        finally:
            self.windowed.window = []
        fired = {id(t) for t in window}
        self.fresh = [t for t in self.fresh if id(t) not in fired]
        self.expired = []

    def _fail_window(self, window: list[Tuple], exc: Exception) -> None:
        """``execute`` raised: fail the window's tuples once, and forget them."""
        failed = {id(t) for t in window}
        self.buffer = [(ts, t) for ts, t in self.buffer if id(t) not in failed]
        collector = self.collector
        reason = FailReason(
            "error", collector.component_id, collector.task_id, f"{type(exc).__name__}: {exc}"
        )
        for tup in window:
            collector.fail_with(tup, reason)

    def _drop(self, n: int) -> None:
        """The ``n`` oldest tuples can be in no later window: ack them."""
        if n <= 0:
            return
        gone, self.buffer = self.buffer[:n], self.buffer[n:]
        if self.fresh:  # dropped before any window held them: new in none
            ids = {id(t) for _, t in gone}
            self.fresh = [t for t in self.fresh if id(t) not in ids]
        for _, tup in gone:
            self._release(tup)
            self.expired.append(tup)

    def _release(self, tup: Tuple) -> None:
        self.collector.ack(tup)

    WINDOW_STATE: tuple[str, ...] = (
        "buffer",
        "expired",
        "fresh",
        "arrived",
        "stream_max",
        "watermark",
        "last_end",
        "passed",
        "late",
    )

    anchors_to_window = True
    """Whether an emit without anchors is anchored to the window's tuples."""

    def window_state(self) -> dict[str, Any]:
        """What the task's snapshot must carry: the tuples waiting and the clocks."""
        return {name: getattr(self, name) for name in self.WINDOW_STATE}

    def restore_window_state(self, state: dict[str, Any]) -> None:
        """Continue from a snapshot's :meth:`window_state`."""
        for name, value in state.items():
            setattr(self, name, value)

    def cleanup(self) -> None:
        """Clean up the bolt (tuples still in the window time out and replay)."""
        self.delegate.cleanup()


class PersistentWindowExecutor(WindowedBoltExecutor):
    """The window manager of a :class:`StatefulWindowedBolt`: its windows are state.

    An input is acked (its ack held until a commit) as it enters the buffer, and is put
    in the task's window state (``kv``, a :class:`KeyValueState` the
    ``StatefulBoltExecutor`` checkpoints beside the user's) under a sequence number; it
    is deleted from there once it is neither in the buffer nor among the next window's
    expired tuples. So a checkpoint writes the tuples that came and went since the last
    one, plus the clocks (:meth:`window_state`, under ``"meta"``), not the windows whole;
    a rollback rebuilds the windows from the committed tuples. A tuple leaving a window
    needs no ack, a stop fails nothing (the windows are in the state), emits are not
    anchored, and an exception in ``execute`` rolls back.
    """

    anchors_to_window = False
    META_KEY = "meta"
    CLOCKS = ("arrived", "stream_max", "watermark", "last_end", "passed", "late")

    def __init__(self, delegate: WindowedBolt) -> None:
        super().__init__(delegate)
        self.kv: KeyValueState | None = None
        self.next_seq = 0
        self.seq_of: dict[int, int] = {}
        """``id(tuple)`` -> its key in ``kv``, for the tuples in the buffer or expired."""

    def _add(self, ts: float, tup: Tuple) -> None:
        super()._add(ts, tup)
        assert self.kv is not None, "restore_windows(kv) comes first"
        seq, self.next_seq = self.next_seq, self.next_seq + 1
        self.seq_of[id(tup)] = seq
        self.kv.put(seq, (ts, tup))
        self.collector.ack(tup)

    def _fire(self, window: list[Tuple], start: float | None, end: float) -> None:
        expired = self.expired
        super()._fire(window, start, end)
        if self.expired is not expired:  # given as this window's expired: gone for good
            assert self.kv is not None
            for tup in expired:
                self.kv.delete(self.seq_of.pop(id(tup)))

    def _release(self, tup: Tuple) -> None:
        pass  # acked as it arrived

    def _stop(self) -> None:
        pass  # what the windows hold is acked, and saved at the next checkpoint

    def _fail_window(self, window: list[Tuple], exc: Exception) -> None:
        collector = self.collector
        collector.state_failures += 1  # type: ignore[attr-defined]
        text = f"window raised {type(exc).__name__}: {exc}"
        reason = FailReason("error", collector.component_id, collector.task_id, text)
        for tup in window:  # theirs to count: a window that always raises ends
            collector.blame(tup.anchors_to_ids or (), reason)  # type: ignore[attr-defined]

    def window_state(self) -> dict[str, Any]:
        """The clocks and which tuples are fresh and expired: the tuples are in ``kv``."""
        state = {name: getattr(self, name) for name in self.CLOCKS}
        state["stream_max"] = dict(self.stream_max)  # a copy: it goes on changing
        state["next_seq"] = self.next_seq
        state["fresh"] = _runs([self.seq_of[id(t)] for t in self.fresh])
        state["expired"] = _runs([self.seq_of[id(t)] for t in self.expired])
        return state

    def restore_window_state(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`window_state`, the tuples read from ``kv`` (set first)."""
        assert self.kv is not None, "set kv before restoring the windows"
        entries = {key: value for key, value in self.kv.items() if isinstance(key, int)}
        for name in self.CLOCKS:
            setattr(self, name, state[name])
        self.stream_max = dict(state["stream_max"])
        self.next_seq = state["next_seq"]
        expired = _expand(state["expired"])
        live = set(entries).difference(expired)
        # the order the buffer had: arrival, or (event time) the stable sort by timestamp
        order = (
            sorted(live) if self.field is None else sorted(live, key=lambda s: (entries[s][0], s))
        )
        self.buffer = [entries[s] for s in order]
        self.expired = [entries[s][1] for s in expired]
        self.fresh = [entries[s][1] for s in _expand(state["fresh"]) if s in live]
        self.seq_of = {id(tup): seq for seq, (_, tup) in entries.items()}

    def save_windows(self) -> None:
        """Put the clocks in ``kv`` beside the tuples: the window state is whole there."""
        assert self.kv is not None
        self.kv.put(self.META_KEY, self.window_state())

    def restore_windows(self, kv: KeyValueState) -> None:
        """Rebuild the windows from ``kv``'s last commit (none yet: empty windows)."""
        self.kv = kv
        state = kv.get(self.META_KEY)
        if state is None:  # nothing committed: empty windows, the run's late count kept
            empty = WindowedBoltExecutor(self.delegate)
            state = {name: getattr(empty, name) for name in self.CLOCKS}
            state.update(late=self.late, next_seq=0, fresh=[], expired=[])
        self.restore_window_state(state)


def _runs(seqs: list[int]) -> list[tuple[int, int]]:
    """``seqs`` as runs of consecutive numbers ``(first, last)``, in their order."""
    runs: list[tuple[int, int]] = []
    for seq in seqs:
        if runs and runs[-1][1] + 1 == seq:
            runs[-1] = (runs[-1][0], seq)
        else:
            runs.append((seq, seq))
    return runs


def _expand(runs: list[tuple[int, int]]) -> list[int]:
    return [seq for first, last in runs for seq in range(first, last + 1)]


def check_windowed(
    component_id: str, bolt: WindowedBolt, conf: dict[str, Any], streams: Any, stateful: bool
) -> None:
    """Storm's checks of a windowed bolt at submit, with what to do about each.

    ``streams`` are the bolt's declared streams; ``stateful``, whether the topology has
    stateful bolts.
    """
    where = f"windowed bolt {component_id!r}"
    length, slide = bolt.window_length, bolt.sliding_interval
    if length is None or slide is None:
        msg = f"{where} has no window: call with_window(...) or with_tumbling_window(...)"
        raise InvalidTopologyError(msg)
    persistent = is_stateful(bolt)
    if stateful and not persistent:
        msg = (
            f"{where}: a plain windowed bolt cannot run in a topology with stateful bolts: "
            f"a checkpoint waits until every tree is acked, and a window holds its tuples "
            f"unacked for its whole length. Make it a StatefulWindowedBolt (its windows are "
            f"checkpointed), or run the window in its own topology"
        )
        raise InvalidTopologyError(msg)
    if persistent and provider_config(conf).get("serializer", "pickle") != "pickle":
        msg = (
            f"{where}: a stateful windowed bolt saves its windows' tuples in the state "
            f"store, which needs the 'pickle' serializer; remove 'serializer' from "
            f"topology.state.provider.config"
        )
        raise InvalidTopologyError(msg)
    late = bolt.late_tuple_stream
    if late is not None and late not in streams:
        msg = (
            f"{where}: its late-tuple stream {late!r} is not declared; declare it in "
            f"declare_output_fields: declarer.declare_stream({late!r}, Fields('tuple'))"
        )
        raise InvalidTopologyError(msg)
    waits = sum(x.secs for x in (length, slide) if isinstance(x, Duration))
    if bolt.timestamp_field is not None:
        waits += bolt.lag.secs + bolt.watermark_interval.secs
    if persistent:
        return  # inputs are acked as they arrive: neither the timeout nor pending binds
    timeout = conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS]
    if waits and conf[TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS] and waits >= timeout:
        msg = (
            f"{where}: a tuple may wait {waits:g} s in its windows (length + interval"
            f"{' + lag + watermark interval' if bolt.timestamp_field else ''}), not less "
            f"than topology.message.timeout.secs ({timeout:g} s): its trees would time out "
            f"first. Raise the timeout (Config.set_message_timeout_secs) or shorten the window"
        )
        raise InvalidTopologyError(msg)
    pending = conf[TOPOLOGY_MAX_SPOUT_PENDING]
    counts = sum(x.value for x in (length, slide) if isinstance(x, Count))
    if isinstance(length, Count) and pending is not None and counts > pending:
        msg = (
            f"{where}: a count window of {length.value} sliding by {slide!r} holds up to "
            f"{counts} tuples, more than topology.max.spout.pending ({pending}): the "
            f"spouts would stop before a window fills. Raise max spout pending"
        )
        raise InvalidTopologyError(msg)
