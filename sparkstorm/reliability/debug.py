"""``topology.debug``: every emit, ack and fail of a component, one line each, as Storm logs.

A component whose configuration sets ``topology.debug`` gets a collector that notes
each call in ``collector.debug`` (the driver logs the notes on the ``sparkstorm.debug``
logger at INFO, as they arrive from the engine, so lines from Spark executors reach the
terminal too). The notes are in subclasses so a topology without debug pays nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from sparkstorm._types import FailReason, MsgId
from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.reliability.spout_collector import SpoutOutputCollector
from sparkstorm.topology.declarers import DEFAULT_STREAM_ID
from sparkstorm.topology.tuple import Tuple

DEBUG_LOG = logging.getLogger("sparkstorm.debug")
"""Where the driver logs the notes (at INFO)."""


class _Noting:
    """What both debug collectors add: the list of notes, and ``_note`` to add one."""

    debug: list[str] | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.debug = []

    def _note(self, line: str) -> None:
        assert self.debug is not None
        self.debug.append(line)


class DebugOutputCollector(_Noting, OutputCollector):
    """A bolt's collector with ``topology.debug`` on: it notes each emit, ack and fail."""

    def emit(
        self,
        values: Sequence[Any],
        anchors: Tuple | Sequence[Tuple] | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> list[int]:
        """Emit, noting ``Emitting: component stream values``."""
        self._note(f"Emitting: {self._component_id} {stream} {list(values)}")
        return super().emit(values, anchors, stream)

    def emit_direct(
        self,
        task: int,
        values: Sequence[Any],
        anchors: Tuple | Sequence[Tuple] | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> None:
        """Emit to ``task``, noting ``Emitting direct: task; component stream values``."""
        self._note(f"Emitting direct: {task}; {self._component_id} {stream} {list(values)}")
        super().emit_direct(task, values, anchors, stream)

    def ack(self, tup: Tuple) -> None:
        """Ack, noting the task, the milliseconds since ``tup`` arrived and the tuple."""
        self._note(f"BOLT ack TASK: {self._task_id} TIME: {_since(tup)} TUPLE: {tup}")
        super().ack(tup)

    def fail_with(self, tup: Tuple, reason: FailReason) -> None:
        """Note Storm's ``BOLT fail`` line, then fail ``tup``."""
        self._note(f"BOLT fail TASK: {self._task_id} TIME: {_since(tup)} TUPLE: {tup} ({reason})")
        super().fail_with(tup, reason)


def _since(tup: Tuple) -> str:
    received = tup.received_at
    return f"{(time.time() - received) * 1000:.0f}" if received else "-"


class DebugSpoutOutputCollector(_Noting, SpoutOutputCollector):
    """A spout's collector with ``topology.debug`` on; its task notes acks and fails."""

    def emit(
        self, values: Sequence[Any], msg_id: MsgId | None = None, stream: str = DEFAULT_STREAM_ID
    ) -> list[int]:
        """Emit, noting ``Emitting: component stream values msg id``."""
        self._note(f"Emitting: {self._component_id} {stream} {list(values)} {msg_id!r}")
        return super().emit(values, msg_id, stream)

    def emit_direct(
        self,
        task: int,
        values: Sequence[Any],
        msg_id: MsgId | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> None:
        """Emit to ``task``, noting ``Emitting direct: task; component stream values msg id``."""
        self._note(
            f"Emitting direct: {task}; {self._component_id} {stream} {list(values)} {msg_id!r}"
        )
        super().emit_direct(task, values, msg_id, stream)
