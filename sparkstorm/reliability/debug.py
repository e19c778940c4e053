"""``topology.debug``: every emit, ack and fail of a component, one line each, as Storm logs.

A component whose configuration sets ``topology.debug`` gets its collector's calls
wrapped, once, when its task is built: each call notes a line in ``collector.debug``
(the driver logs the notes on the ``sparkstorm.debug`` logger at INFO, as they arrive
from the engine, so lines from Spark executors reach the terminal too). The wrappers
are instance attributes, so a topology without debug pays nothing, and stateful or not,
one collector class serves (Storm checks ``isDebug`` in its collectors instead).
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


def note_bolt_calls(collector: OutputCollector) -> None:
    """Note each emit, ack and fail of a bolt task's ``collector`` in ``collector.debug``."""
    notes: list[str] = []
    collector.debug = notes
    component, task_id = collector.component_id, collector.task_id
    emit, emit_direct, ack, fail_with = (
        collector.emit,
        collector.emit_direct,
        collector.ack,
        collector.fail_with,
    )

    def noting_emit(
        values: Sequence[Any],
        anchors: Tuple | Sequence[Tuple] | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> list[int]:
        notes.append(f"Emitting: {component} {stream} {list(values)}")
        return emit(values, anchors, stream)

    def noting_emit_direct(
        task: int,
        values: Sequence[Any],
        anchors: Tuple | Sequence[Tuple] | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> None:
        notes.append(f"Emitting direct: {task}; {component} {stream} {list(values)}")
        emit_direct(task, values, anchors, stream)

    def noting_ack(tup: Tuple) -> None:
        notes.append(f"BOLT ack TASK: {task_id} TIME: {_since(tup)} TUPLE: {tup}")
        ack(tup)

    def noting_fail_with(tup: Tuple, reason: FailReason) -> None:
        notes.append(f"BOLT fail TASK: {task_id} TIME: {_since(tup)} TUPLE: {tup} ({reason})")
        fail_with(tup, reason)

    collector.emit = noting_emit  # type: ignore[method-assign]
    collector.emit_direct = noting_emit_direct  # type: ignore[method-assign]
    collector.ack = noting_ack  # type: ignore[method-assign]
    collector.fail_with = noting_fail_with  # type: ignore[method-assign]


def note_spout_calls(collector: SpoutOutputCollector) -> None:
    """Note each emit of a spout task's ``collector``; its task notes acks and fails."""
    notes: list[str] = []
    collector.debug = notes
    component = collector.component_id
    emit, emit_direct = collector.emit, collector.emit_direct

    def noting_emit(
        values: Sequence[Any], msg_id: MsgId | None = None, stream: str = DEFAULT_STREAM_ID
    ) -> list[int]:
        notes.append(f"Emitting: {component} {stream} {list(values)} {msg_id!r}")
        return emit(values, msg_id, stream)

    def noting_emit_direct(
        task: int,
        values: Sequence[Any],
        msg_id: MsgId | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> None:
        notes.append(f"Emitting direct: {task}; {component} {stream} {list(values)} {msg_id!r}")
        emit_direct(task, values, msg_id, stream)

    collector.emit = noting_emit  # type: ignore[method-assign]
    collector.emit_direct = noting_emit_direct  # type: ignore[method-assign]


def _since(tup: Tuple) -> str:
    received = tup.received_at
    return f"{(time.time() - received) * 1000:.0f}" if received else "-"
