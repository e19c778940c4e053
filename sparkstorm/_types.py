"""Type aliases shared across the package, in Storm's vocabulary."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, TypeAlias

MsgId: TypeAlias = Hashable
"""A spout's message id: any hashable value the spout chooses (a queue delivery tag, a key)."""
Values: TypeAlias = list[Any]
"""The values of one tuple, in the order of its stream's declared fields."""
TaskId: TypeAlias = int
RootId: TypeAlias = int
EdgeId: TypeAlias = int


from dataclasses import dataclass  # noqa: E402


@dataclass(frozen=True, slots=True)
class FailReason:
    """Why a tracked message failed, as its spout's ``fail(msg_id, reason)`` sees it.

    ``kind`` is one of ``"timeout"`` (its tree was not complete in time), ``"explicit"``
    (a bolt called ``fail``; ``component``/``task`` name it), ``"error"`` (a bolt raised;
    ``error`` holds the exception text), ``"shutdown"`` (the topology stopped first) or
    ``"rollback"`` (a failure elsewhere rolled the stateful bolts back to their last
    checkpoint; the message must be replayed). Neither of the last two is the message's
    fault: a spout that counts attempts should not count them.

    .. versionadded:: 0.1.0
    """

    kind: str
    component: str | None = None
    task: int | None = None
    error: str | None = None

    def __str__(self) -> str:
        where = f" by {self.component}:{self.task}" if self.component is not None else ""
        text = f": {self.error}" if self.error else ""
        return f"{self.kind}{where}{text}"


TIMEOUT = FailReason("timeout")
SHUTDOWN = FailReason("shutdown")
ROLLBACK = FailReason("rollback")


def counts_as_attempt(reason: FailReason | None) -> bool:
    """Whether a failure is the message's own (not a stop or a rollback of others' state)."""
    return reason is None or reason.kind not in (SHUTDOWN.kind, ROLLBACK.kind)
