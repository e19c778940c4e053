"""Task hooks: code that sees every emit, ack, fail and execute of a task (Storm's ``ITaskHook``).

Subclass :class:`BaseTaskHook` and override what you need. Register a hook for every
task with ``topology.auto.task.hooks`` (a list of hook classes, or their
``"package.module.Class"`` names; each task makes its own instance), or for one task
from its ``prepare``/``open`` with ``context.add_task_hook(hook)``. A hook runs in the
process of the task it serves, on the task's thread; an exception in it is reported
as the task's error and the task goes on. A task without hooks pays nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparkstorm.config import TOPOLOGY_AUTO_TASK_HOOKS as AUTO_TASK_HOOKS
from sparkstorm.topology.named_classes import load_class

if TYPE_CHECKING:
    from sparkstorm._types import MsgId
    from sparkstorm.topology.context import TopologyContext
    from sparkstorm.topology.tuple import Tuple


@dataclass(frozen=True, slots=True)
class EmitInfo:
    """An emit: its values, stream, the emitting task and the tasks it went to."""

    values: list[Any]
    stream: str
    task_id: int
    out_tasks: list[int]


@dataclass(frozen=True, slots=True)
class SpoutAckInfo:
    """A spout's message fully processed, and how long its tree took."""

    message_id: MsgId
    spout_task_id: int
    complete_latency_ms: float | None


@dataclass(frozen=True, slots=True)
class SpoutFailInfo:
    """A spout's message failed, and how long after its emit."""

    message_id: MsgId
    spout_task_id: int
    fail_latency_ms: float | None


@dataclass(frozen=True, slots=True)
class BoltExecuteInfo:
    """A tuple a bolt executed, and how long ``execute`` took."""

    tuple: Tuple
    executing_task_id: int
    execute_latency_ms: float


@dataclass(frozen=True, slots=True)
class BoltAckInfo:
    """A tuple a bolt acked, and how long after it received it."""

    tuple: Tuple
    acking_task_id: int
    process_latency_ms: float


@dataclass(frozen=True, slots=True)
class BoltFailInfo:
    """A tuple a bolt failed, and how long after it received it."""

    tuple: Tuple
    failing_task_id: int
    fail_latency_ms: float


class BaseTaskHook:
    """A task hook that does nothing: override the calls you need (Storm's ``BaseTaskHook``).

    .. versionadded:: 0.2.0
    """

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """Called once, when the hook is added to its task."""

    def cleanup(self) -> None:
        """Called when the task is cleaned up (a bolt) or closed (a spout)."""

    def emit(self, info: EmitInfo) -> None:
        """After each emit of the task."""

    def spout_ack(self, info: SpoutAckInfo) -> None:
        """After the spout's ``ack``."""

    def spout_fail(self, info: SpoutFailInfo) -> None:
        """After the spout's ``fail``."""

    def bolt_execute(self, info: BoltExecuteInfo) -> None:
        """After each ``execute`` of the bolt."""

    def bolt_ack(self, info: BoltAckInfo) -> None:
        """After the bolt acks a tuple."""

    def bolt_fail(self, info: BoltFailInfo) -> None:
        """After the bolt fails a tuple."""


def hook_classes(conf: dict[str, Any]) -> list[type]:
    """The classes ``topology.auto.task.hooks`` names (classes, or their dotted names)."""
    return [load_class(AUTO_TASK_HOOKS, entry) for entry in conf.get(AUTO_TASK_HOOKS) or []]
