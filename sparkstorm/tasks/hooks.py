"""Task hooks at work: a task's hooks called at each emit, ack, fail and execute.

Installed once a task is built (``topology.auto.task.hooks``) and prepared or opened
(``context.add_task_hook``). The collector's ``emit``, ``emit_direct``, ``ack`` and
``fail_with`` are wrapped as instance attributes, as ``topology.debug`` wraps them, so
a task without hooks keeps its hot path; an exception in a hook is the task's reported
error, and the task goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from sparkstorm._types import FailReason
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import DEFAULT_STREAM_ID
from sparkstorm.topology.hooks import BoltAckInfo, BoltFailInfo, EmitInfo, hook_classes
from sparkstorm.topology.tuple import Tuple


def add_auto_hooks(context: TopologyContext) -> None:
    """A new instance of each ``topology.auto.task.hooks`` class, added to the task."""
    for hook in hook_classes(context.conf):
        context.add_task_hook(hook())


class Hooks:
    """Calls every hook of one task; an exception in one is reported, not raised."""

    def __init__(self, hooks: list[Any], report: Callable[[BaseException], None]) -> None:
        self.hooks, self.report = hooks, report

    def __call__(self, method: str, info: Any) -> None:
        """``hook.<method>(info)`` on each hook."""
        for hook in self.hooks:
            try:
                getattr(hook, method)(info)
            except Exception as exc:
                self.report(exc)

    def cleanup(self) -> None:
        """Each hook's ``cleanup``."""
        for hook in self.hooks:
            try:
                hook.cleanup()
            except Exception as exc:
                self.report(exc)


def hook_emits(collector: Any, hooks: Hooks, task_id: int) -> None:
    """Call ``emit`` on the hooks after each emit of ``collector`` (a spout's or a bolt's)."""
    emit, emit_direct = collector.emit, collector.emit_direct

    def hooked_emit(values: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        targets = emit(values, *args, **kwargs)
        stream = kwargs.get("stream", args[1] if len(args) > 1 else DEFAULT_STREAM_ID)
        hooks("emit", EmitInfo(list(values), stream, task_id, list(targets or [])))
        return targets

    def hooked_emit_direct(task: int, values: Sequence[Any], *args: Any, **kwargs: Any) -> None:
        emit_direct(task, values, *args, **kwargs)
        stream = kwargs.get("stream", args[1] if len(args) > 1 else DEFAULT_STREAM_ID)
        hooks("emit", EmitInfo(list(values), stream, task_id, [task]))

    collector.emit = hooked_emit
    collector.emit_direct = hooked_emit_direct


def hook_bolt_outcomes(collector: Any, hooks: Hooks, task_id: int) -> None:
    """Call ``bolt_ack`` and ``bolt_fail`` on the hooks after each ack and fail."""
    ack, fail_with = collector.ack, collector.fail_with

    def hooked_ack(tup: Tuple) -> None:
        ack(tup)
        hooks("bolt_ack", BoltAckInfo(tup, task_id, _since_ms(tup)))

    def hooked_fail_with(tup: Tuple, reason: FailReason) -> None:
        fail_with(tup, reason)
        hooks("bolt_fail", BoltFailInfo(tup, task_id, _since_ms(tup)))

    collector.ack = hooked_ack
    collector.fail_with = hooked_fail_with


def _since_ms(tup: Tuple) -> float:
    return (time.time() - tup.received_at) * 1000 if tup.received_at else 0.0
