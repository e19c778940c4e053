"""Windowed bolts for the windowing scenarios: each emits what its windows held (the
Arrow ones over columns, the same values)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sparkstorm import Bolt, Fields, WindowedBolt
from sparkstorm.arrow import WindowedArrowBolt


class Recorder(WindowedBolt):
    """Emits, per window, the values of ``get()``, ``get_new()``, ``get_expired()`` and the
    window's end."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, window: Any) -> None:
        values = [[t.values[0] for t in part] for part in (window, window.get_new())]
        expired = [t.values[0] for t in window.get_expired()]
        self.collector.emit([values[0], values[1], expired, window.end_timestamp])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("window", "new", "expired", "end"))
        declarer.declare_stream("late", Fields("tuple"))


class Raises(WindowedBolt):
    """Raises on a window holding ``"bad"``; emits the others' values."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, window: Any) -> None:
        values = [t.values[0] for t in window]
        if "bad" in values:
            msg = "a bad window"
            raise RuntimeError(msg)
        self.collector.emit([values])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("window"))


class HoldOne(Bolt):
    """Acks every window but one holding ``"hold"``, which it neither acks nor fails."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        if "hold" not in tup.values[0]:
            self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


class ArrowRecorder(WindowedArrowBolt):
    """:class:`Recorder` over columns: per window, a row of the first column's values of
    ``get()``, ``get_new()``, ``get_expired()``, and the window's end."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, window: Any) -> None:
        parts = (window.get(), window.get_new(), window.get_expired())
        values = [pa.array([part.column(0).to_pylist()]) for part in parts]
        end = pa.array([window.end_timestamp], pa.float64())
        names = ["window", "new", "expired", "end"]
        self.collector.emit_batch(pa.record_batch([*values, end], names=names))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("window", "new", "expired", "end"))
        declarer.declare_stream("late", Fields("x", "ts"))  # late rows keep their columns


class ArrowRaises(WindowedArrowBolt):
    """:class:`Raises` over columns."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, window: Any) -> None:
        values = window.get().column(0).to_pylist()
        if "bad" in values:
            msg = "a bad window"
            raise RuntimeError(msg)
        self.collector.emit_batch(pa.record_batch([pa.array([values])], names=["window"]))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("window"))


class ArrowEcho(WindowedArrowBolt):
    """Emits each row of a window, anchored to that row alone (``anchors=rows``)."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, window: Any) -> None:
        rows = window.get()
        out = pa.record_batch([rows.column(0).combine_chunks()], names=["x"])
        self.collector.emit_batch(out, anchors=pa.array(range(rows.num_rows)))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("x"))
