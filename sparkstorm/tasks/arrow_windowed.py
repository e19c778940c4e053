"""Running a windowed Arrow bolt: Storm's window manager over record batches.

The windows are the tuple window manager's (``tasks/windowed``: the same triggers,
watermarks and evictions), over rows instead of tuples. A row is held as a number,
``batch << 32 | row``, naming an input batch kept here (and held by the collector,
whose rows it settles) and a row of it: no Python object a row, and a window's rows are
taken from their batches as a table when ``execute`` asks for them. Rows are acked a
batch at a time as they leave their last window, and late rows (event time) go on
their stream as a batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from sparkstorm._types import SHUTDOWN, FailReason
from sparkstorm.errors import InvalidTopologyError
from sparkstorm.reliability.batch_collectors import (
    BatchOutputCollector,
    anchor_arrays,
    check_anchor_rows,
    checked_route,
    combined_links,
)
from sparkstorm.reliability.window_anchors import window_links
from sparkstorm.tasks.windowed import WindowedBoltExecutor
from sparkstorm.topology.columnar import ArrowWindow, WindowedArrowBolt
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import DEFAULT_STREAM_ID
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.row_batch import Links, RowBatch
from sparkstorm.topology.windowing import Count

if TYPE_CHECKING:
    from sparkstorm.state.key_value import KeyValueState

ROW_BITS = 32
ROW_MASK = (1 << ROW_BITS) - 1


class WindowedBatchCollector:
    """A windowed Arrow bolt's collector: an emit is anchored to the window's rows."""

    def __init__(self, collector: BatchOutputCollector, executor: ArrowWindowExecutor) -> None:
        self._collector = collector
        self._executor = executor
        self.window: list[int] | None = None
        """The rows of the window ``execute`` runs on (None outside ``execute``)."""

    def emit_batch(
        self, batch: pa.RecordBatch, anchors: Any = None, stream: str = DEFAULT_STREAM_ID
    ) -> int:
        """Emit ``batch``: every row anchored to the window, or to its rows ``anchors``."""
        return self._emit(None, batch, anchors, stream)

    def emit_batch_direct(
        self,
        task: int,
        batch: pa.RecordBatch,
        anchors: Any = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> int:
        """Emit every row of ``batch`` to ``task``, anchored as :meth:`emit_batch`'s."""
        return self._emit(task, batch, anchors, stream)

    def _emit(self, task: int | None, batch: pa.RecordBatch, anchors: Any, stream: str) -> int:
        collector = self._collector
        component = collector.component_id
        route = checked_route(collector._routes, component, stream, batch, task is not None)
        direct = None if task is None else collector._direct_target(route, task)[0]
        window = self.window
        if window is None:
            msg = f"windowed bolt {component!r} emitted outside execute(window)"
            raise InvalidTopologyError(msg, component=component, stream=stream)
        executor = self._executor
        if not executor.anchors_to_window:  # a stateful window's: its inputs are acked
            if anchors is not None:
                msg = (
                    f"stateful windowed bolt {component!r} emitted with anchors: its inputs "
                    f"complete at checkpoints, not with windows, so its emits are not "
                    f"anchored (as in Storm); emit without anchors"
                )
                raise InvalidTopologyError(msg, component=component, stream=stream)
            return collector.send_rows(route, direct, batch, None)
        if anchors is None:
            parts = executor.by_batch(window)
            return collector.send_rows(
                route,
                direct,
                batch,
                lambda rows: window_links(collector._next_id, parts, len(rows)),
            )
        positions = anchor_arrays(anchors, batch.num_rows, component, stream)
        check_anchor_rows(positions, len(window), component, stream)  # rows of window.get()
        return collector.send_rows(
            route, direct, batch, lambda rows: executor.links_to(window, positions, rows)
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_collector", "_executor"):  # unpickling
            raise AttributeError(name)
        return getattr(self._collector, name)


class ArrowWindowExecutor(WindowedBoltExecutor):
    """Runs a :class:`WindowedArrowBolt` (``delegate``) over windows of its input rows."""

    WINDOW_STATE = (*WindowedBoltExecutor.WINDOW_STATE, "batches", "next_batch", "schema")
    collector: BatchOutputCollector
    buffer: list[tuple[float, Any]]  # (time, row): a row is a number, not a Tuple
    expired: list[Any]
    fresh: list[Any]

    def __init__(self, delegate: WindowedArrowBolt) -> None:
        super().__init__(delegate)
        self.batches: dict[int, RowBatch] = {}
        """The input batches that rows in the buffer or in ``expired`` come from."""
        self.next_batch = 0
        self.schema: pa.Schema | None = None

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: Any) -> None:
        """Prepare the bolt with a collector that anchors to the window."""
        self.collector = collector
        self.windowed = WindowedBatchCollector(collector, self)  # type: ignore[assignment]
        self.delegate.prepare(conf, context, self.windowed)  # type: ignore[arg-type]

    # -- rows in ------------------------------------------------------------------------
    def execute_batch(self, batch: pa.RecordBatch) -> None:
        """Take an input batch's rows into the buffer; a count interval fires as it fills."""
        source = self.collector.current
        assert source is not None and source.batch is batch
        n = source.num_rows
        if not n:
            self.collector.ack_batch()
            return
        number, self.next_batch = self.next_batch, self.next_batch + 1
        self.batches[number] = source
        self.schema = batch.schema
        handles = (np.arange(n, dtype=np.int64) + (number << ROW_BITS)).tolist()
        if self.field is None:
            self._arrive(handles, [self.collector.now] * n)
            return
        stamps = self._event_times(source)
        late = stamps < self.watermark
        if late.any():
            self._late_rows(source, late, stamps)
            keep = ~late
            handles = [h for h, k in zip(handles, keep.tolist(), strict=True) if k]
            stamps = stamps[keep]
        if len(stamps):
            stream = (source.source_component, source.source_stream)
            top = float(stamps.max())
            self.stream_max[stream] = max(top, self.stream_max.get(stream, top))
            self.buffer.extend(zip(stamps.tolist(), handles, strict=True))
            self.fresh.extend(handles)

    def _arrive(self, handles: list[int], stamps: list[float]) -> None:
        """Processing time: into the buffer, firing every ``Count`` interval as it fills."""
        slide = self.slide
        if not isinstance(slide, Count):
            self.buffer.extend(zip(stamps, handles, strict=True))
            self.fresh.extend(handles)
            return
        at = 0
        while at < len(handles):
            take = min(slide.value - self.arrived, len(handles) - at)
            self.buffer.extend(zip(stamps[at : at + take], handles[at : at + take], strict=True))
            self.fresh.extend(handles[at : at + take])
            at += take
            self.arrived += take
            if self.arrived >= slide.value:
                self.arrived = 0
                self._fire_at(self.collector.now)

    def _event_times(self, source: RowBatch) -> Any:
        field = self.field
        assert field is not None
        where = (
            f"windowed bolt {self.collector.component_id!r}: the timestamp field {field!r} "
            f"of rows from {source.source_component!r} stream {source.source_stream!r}"
        )
        if field not in source.batch.schema.names:
            msg = f"{where} is missing; the rows have {source.batch.schema.names}"
            raise ValueError(msg)
        column = source.batch.column(field)
        if column.null_count:
            msg = f"{where} has {column.null_count} null(s): give every row a time in seconds"
            raise ValueError(msg)
        try:
            return np.asarray(column.to_numpy(zero_copy_only=False), np.float64)
        except (TypeError, ValueError) as exc:
            msg = f"{where} is {column.type}, not a number of seconds ({exc})"
            raise ValueError(msg) from exc

    def _late_rows(self, source: RowBatch, late: Any, stamps: Any) -> None:
        """Rows older than the watermark: on the late stream, or counted and said; acked."""
        before, count = self.late, int(late.sum())
        self.late += count
        collector = self.collector
        stream = self.delegate.late_tuple_stream
        if stream is not None:
            rows = np.nonzero(late)[0]
            collector.emit_batch(source.batch.take(pa.array(rows)), anchors=rows, stream=stream)
        elif before == 0 or before // 1000 != self.late // 1000:
            collector.report_error(
                ValueError(
                    f"windowed bolt {collector.component_id!r}: {self.late} late row(s) so "
                    f"far (event time {float(stamps[late].min())} < watermark "
                    f"{self.watermark}) were acked without being in a window; give it "
                    f"with_late_tuple_stream(...) to process them, or with_lag(...) to wait "
                    f"longer"
                )
            )
        collector.ack_rows(late)

    # -- windows ------------------------------------------------------------------------
    def _fire(self, window: list[Any], start: float | None, end: float) -> None:
        if not window and not self.expired:
            return
        fresh = set(self.fresh)
        new = [h for h in window if h in fresh]
        arrow = ArrowWindow(self.table_of, window, new, self.expired, start, end)
        windowed: WindowedBatchCollector = self.windowed  # type: ignore[assignment]
        windowed.window = window
        try:
            self.delegate.execute(arrow)  # type: ignore[arg-type]
        except Exception as exc:
            self.collector.report_error(exc)
            self._fail_window(window, exc)
            window = []
        finally:
            windowed.window = None
        fired = set(window)
        self.fresh = [h for h in self.fresh if h not in fired]
        self.expired = []
        self._forget_batches()

    def _drop(self, n: int) -> None:
        """The ``n`` oldest rows can be in no later window: ack them."""
        if n <= 0:
            return
        gone, self.buffer = self.buffer[:n], self.buffer[n:]
        handles = [h for _, h in gone]
        if self.fresh:  # dropped before any window held them: new in none
            dropped = set(handles)
            self.fresh = [h for h in self.fresh if h not in dropped]
        for source, rows in self.by_batch(handles):
            self._settle(source, rows, None)
        self.expired.extend(handles)

    def _fail_window(self, window: list[Any], exc: Exception) -> None:
        """``execute`` raised: fail the window's rows once, and forget them."""
        failed = set(window)
        self.buffer = [(ts, h) for ts, h in self.buffer if h not in failed]
        collector = self.collector
        text = f"{type(exc).__name__}: {exc}"
        reason = FailReason("error", collector.component_id, collector.task_id, text)
        for source, rows in self.by_batch(window):
            self._settle(source, rows, reason)

    def _stop(self) -> None:
        """Fail what the windows hold with ``shutdown``: its spouts replay it after."""
        for source, rows in self.by_batch([h for _, h in self.buffer]):
            self._settle(source, rows, SHUTDOWN)
        self.buffer, self.fresh, self.arrived = [], [], 0
        self._forget_batches()

    def _settle(self, source: RowBatch, rows: Any, reason: FailReason | None) -> None:
        # a row failed already (a window raised) stays so
        mask = source.mask_of(rows) & source.unsettled()
        if not mask.any():
            return
        collector = self.collector
        if source is not collector.current:
            collector.held[id(source.batch)] = source
        if reason is None:
            collector.ack_rows(mask, source.batch)
        else:
            collector.fail_rows_with(source, mask, reason)

    def _forget_batches(self) -> None:
        """Let go of the input batches that no row in the buffer or ``expired`` is of.

        Not of the batch being taken in: its later rows may not be in the buffer yet.
        """
        live = {h >> ROW_BITS for _, h in self.buffer}
        live.update(h >> ROW_BITS for h in self.expired)
        current = self.collector.current
        for number in [b for b in self.batches if b not in live]:
            if self.batches[number] is not current:
                del self.batches[number]

    # -- rows as tables and anchors -----------------------------------------------------
    def by_batch(self, handles: list[int]) -> list[tuple[RowBatch, Any]]:
        """``handles`` grouped by input batch: (batch, its rows as an int array)."""
        if not handles:
            return []
        array = np.asarray(handles, np.int64)
        numbers = array >> ROW_BITS
        order = np.argsort(numbers, kind="stable")
        numbers, rows = numbers[order], array[order] & ROW_MASK
        starts = np.flatnonzero(np.r_[True, numbers[1:] != numbers[:-1]])
        ends = np.r_[starts[1:], len(numbers)]
        return [
            (self.batches[int(numbers[s])], rows[s:e]) for s, e in zip(starts, ends, strict=True)
        ]

    def table_of(self, handles: list[int]) -> pa.Table:
        """The rows ``handles`` names, in that order, as one table."""
        if not handles:
            schema = self.schema if self.schema is not None else pa.schema([])
            return schema.empty_table()
        array = np.asarray(handles, np.int64)
        numbers, rows = array >> ROW_BITS, array & ROW_MASK
        starts = np.flatnonzero(np.r_[True, numbers[1:] != numbers[:-1]])
        ends = np.r_[starts[1:], len(numbers)]
        pieces = []
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            batch = self.batches[int(numbers[s])].batch
            first, count = int(rows[s]), e - s
            if int(rows[e - 1]) - first + 1 == count and bool(np.all(np.diff(rows[s:e]) == 1)):
                pieces.append(batch.slice(first, count))
            else:
                pieces.append(batch.take(pa.array(rows[s:e])))
        try:
            return pa.Table.from_batches(pieces)
        except pa.ArrowInvalid as exc:
            msg = (
                f"windowed Arrow bolt {self.collector.component_id!r}: the rows of one window "
                f"came with different columns ({exc}); a window is one table: give its "
                f"input streams the same fields and types"
            )
            raise InvalidTopologyError(msg, component=self.collector.component_id) from exc

    def links_to(self, window: list[int], positions: list[Any], rows: Any) -> Links:
        """Links of output ``rows`` anchored to the window rows at ``positions``."""
        handles = np.asarray(window, np.int64)
        everyone = np.arange(len(rows))
        parts = []
        for anchor in positions:
            at = anchor[rows]
            hit = at >= 0
            picked = np.full(len(rows), -1, np.int64)
            picked[hit] = handles[at[hit]]
            numbers = np.where(hit, picked >> ROW_BITS, -1)
            for number in np.unique(numbers[hit]).tolist():
                in_batch = np.where(numbers == number, picked & ROW_MASK, -1)
                source = self.batches[number]
                parts.append(self.collector._anchor(source, [in_batch], everyone))
        if not parts:
            return Links.empty()
        return parts[0] if len(parts) == 1 else combined_links(parts)

    def restore_window_state(self, state: dict[str, Any]) -> None:
        """Continue from a snapshot: its batches held again, to settle their rows."""
        super().restore_window_state(state)
        for source in self.batches.values():
            self.collector.held[id(source.batch)] = source


class PersistentArrowWindowExecutor(ArrowWindowExecutor):
    """The window manager of a :class:`StatefulWindowedArrowBolt`: its windows are state.

    As ``PersistentWindowExecutor`` is for tuples: an input batch's rows are acked (their
    acks held until a commit) as they arrive, and the batch is put in the task's window
    state (``kv``) under its number; it is deleted from there once no row of it is in the
    buffer or among the next window's expired rows. A checkpoint writes the batches that
    came and went since the last one, and the clocks and which rows each list holds
    (:meth:`window_state`, under ``"meta"``); a rollback rebuilds the windows from the
    committed batches. Emits are not anchored, a stop fails nothing, and an exception in
    ``execute`` rolls back.
    """

    anchors_to_window = False
    META_KEY = "meta"
    CLOCKS = ("arrived", "stream_max", "watermark", "last_end", "passed", "late", "next_batch")

    def __init__(self, delegate: WindowedArrowBolt) -> None:
        super().__init__(delegate)
        self.kv: KeyValueState | None = None

    def execute_batch(self, batch: pa.RecordBatch) -> None:
        """Take the rows in, keep the batch in the window state, ack the rows."""
        assert self.kv is not None, "restore_windows(kv) comes first"
        source = self.collector.current
        assert source is not None
        if source.num_rows:
            self.kv.put(self.next_batch, batch)
        super().execute_batch(batch)
        unsettled = source.unsettled()
        if unsettled.any():
            self.collector.ack_rows(unsettled)

    def _settle(self, source: RowBatch, rows: Any, reason: FailReason | None) -> None:
        pass  # acked as they arrived

    def _stop(self) -> None:
        pass  # what the windows hold is acked, and saved at the next checkpoint

    def _fail_window(self, window: list[Any], exc: Exception) -> None:
        collector = self.collector
        collector.state_failures += 1  # type: ignore[attr-defined]
        text = f"window raised {type(exc).__name__}: {exc}"
        reason = FailReason("error", collector.component_id, collector.task_id, text)
        for source, rows in self.by_batch(window):  # theirs to count: a window that
            roots = source.links.of(source.mask_of(rows)).roots  # always raises ends
            collector.blame(np.unique(roots).tolist(), reason)  # type: ignore[attr-defined]

    def _forget_batches(self) -> None:
        before = set(self.batches)
        super()._forget_batches()
        assert self.kv is not None
        for number in before.difference(self.batches):
            self.kv.delete(number)

    def window_state(self) -> dict[str, Any]:
        """The clocks and which rows each list holds: the batches are in ``kv``."""
        state = {name: getattr(self, name) for name in self.CLOCKS}
        state["stream_max"] = dict(self.stream_max)  # a copy: it goes on changing
        state["buffer"] = list(self.buffer)
        state["fresh"], state["expired"] = list(self.fresh), list(self.expired)
        state["schema"] = self.schema
        return state

    def restore_window_state(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`window_state`, the batches read from ``kv`` (set first)."""
        assert self.kv is not None, "set kv before restoring the windows"
        for name in (*self.CLOCKS, "schema"):
            setattr(self, name, state[name])
        # copies: the lists grow in place, and the state's committed value must not
        self.buffer, self.fresh = list(state["buffer"]), list(state["fresh"])
        self.expired, self.stream_max = list(state["expired"]), dict(state["stream_max"])
        self.batches = {
            key: RowBatch(value, Fields(value.schema.names), "", "", -1)
            for key, value in self.kv.items()
            if isinstance(key, int)
        }

    def save_windows(self) -> None:
        """Put the clocks in ``kv`` beside the batches: the window state is whole there."""
        assert self.kv is not None
        self.kv.put(self.META_KEY, self.window_state())

    def restore_windows(self, kv: KeyValueState) -> None:
        """Rebuild the windows from ``kv``'s last commit (none yet: empty windows)."""
        self.kv = kv
        state = kv.get(self.META_KEY)
        if state is None:  # nothing committed: empty windows, the run's late count kept
            empty = ArrowWindowExecutor(self.delegate)  # type: ignore[arg-type]
            state = {name: getattr(empty, name) for name in self.CLOCKS}
            state.update(late=self.late, buffer=[], fresh=[], expired=[], schema=None)
        self.restore_window_state(state)
