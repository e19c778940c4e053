"""Windowed bolts for the windowing scenarios: each emits what its windows held."""

from __future__ import annotations

from typing import Any

from sparkstorm import Bolt, Fields, WindowedBolt


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
