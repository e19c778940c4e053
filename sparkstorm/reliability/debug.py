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
from collections.abc import Mapping, Sequence
from typing import Any

from sparkstorm._types import FailReason, MsgId
from sparkstorm.reliability.base_collector import Notes
from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.reliability.spout_collector import SpoutOutputCollector
from sparkstorm.topology.declarers import DEFAULT_STREAM_ID
from sparkstorm.topology.tuple import Tuple

DEBUG_LOG = logging.getLogger("sparkstorm.debug")
"""Where the driver logs the notes (at INFO)."""
NOTED = ("emit", "emit_direct", "ack", "fail_with")
"""The collector methods the notes wrap."""


def debug_share(collector: OutputCollector | SpoutOutputCollector) -> float:
    """The share of the collector's calls noted now (0: debug is off)."""
    return collector.debug.share if collector.debug is not None else 0.0


def set_debug_share(collector: OutputCollector | SpoutOutputCollector, share: float) -> None:
    """Note ``share`` of the collector's calls from now on (0 stops the notes).

    What ``topology.debug`` starts at submission, an operator turns on, off, or to a
    sampling percentage while the topology runs (Storm UI's Debug). Lines noted and not
    handed over yet are kept.
    """
    notes = collector.debug
    if share <= 0:
        if notes is not None and notes.share > 0:
            for name in NOTED:
                collector.__dict__.pop(name, None)  # the class's own methods again
            notes.share = 0.0  # handed over once more, then gone
        return
    if notes is not None and notes.share > 0:
        notes.share = share
        return
    if isinstance(collector, SpoutOutputCollector):
        note_spout_calls(collector, share)
    else:
        note_bolt_calls(collector, share)
    collector.debug.extend(notes or [])  # type: ignore[union-attr]


def apply_debug(tasks: Mapping[int, Any], shares: Mapping[str, float]) -> None:
    """Give each task's collector its component's debug share (ackers have none)."""
    for task in tasks.values():
        share = shares.get(task.component_id)
        if share is not None:
            set_debug_share(task.collector, share)


def note_bolt_calls(collector: OutputCollector, share: float = 1.0) -> None:
    """Note each emit, ack and fail of a bolt task's ``collector`` in ``collector.debug``.

    A ``share`` of them, sampled: Storm's sampling percentage over 100.
    """
    notes = Notes(share)
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
        if notes.sampled():
            notes.append(f"Emitting: {component} {stream} {list(values)}")
        return emit(values, anchors, stream)

    def noting_emit_direct(
        task: int,
        values: Sequence[Any],
        anchors: Tuple | Sequence[Tuple] | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> None:
        if notes.sampled():
            notes.append(f"Emitting direct: {task}; {component} {stream} {list(values)}")
        emit_direct(task, values, anchors, stream)

    def noting_ack(tup: Tuple) -> None:
        if notes.sampled():
            notes.append(f"BOLT ack TASK: {task_id} TIME: {_since(tup)} TUPLE: {tup}")
        ack(tup)

    def noting_fail_with(tup: Tuple, reason: FailReason) -> None:
        if notes.sampled():
            notes.append(f"BOLT fail TASK: {task_id} TIME: {_since(tup)} TUPLE: {tup} ({reason})")
        fail_with(tup, reason)

    collector.emit = noting_emit  # type: ignore[method-assign]
    collector.emit_direct = noting_emit_direct  # type: ignore[method-assign]
    collector.ack = noting_ack  # type: ignore[method-assign]
    collector.fail_with = noting_fail_with  # type: ignore[method-assign]


def note_spout_calls(collector: SpoutOutputCollector, share: float = 1.0) -> None:
    """Note each emit of a spout task's ``collector``; its task notes acks and fails.

    A ``share`` of them, sampled: Storm's sampling percentage over 100.
    """
    notes = Notes(share)
    collector.debug = notes
    component = collector.component_id
    emit, emit_direct = collector.emit, collector.emit_direct

    def noting_emit(
        values: Sequence[Any], msg_id: MsgId | None = None, stream: str = DEFAULT_STREAM_ID
    ) -> list[int]:
        if notes.sampled():
            notes.append(f"Emitting: {component} {stream} {list(values)} {msg_id!r}")
        return emit(values, msg_id, stream)

    def noting_emit_direct(
        task: int,
        values: Sequence[Any],
        msg_id: MsgId | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> None:
        if notes.sampled():
            notes.append(f"Emitting direct: {task}; {component} {stream} {list(values)} {msg_id!r}")
        emit_direct(task, values, msg_id, stream)

    collector.emit = noting_emit  # type: ignore[method-assign]
    collector.emit_direct = noting_emit_direct  # type: ignore[method-assign]


def _since(tup: Tuple) -> str:
    received = tup.received_at
    return f"{(time.time() - received) * 1000:.0f}" if received else "-"
