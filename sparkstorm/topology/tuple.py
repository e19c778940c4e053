"""``Tuple``: one message on a stream, as a bolt receives it (Storm's ``TupleImpl``).

Besides its values a tuple carries what the reliability core needs: the root ids of the
trees it belongs to, each with its edge id (Storm's ``MessageId``), and ``_ack_val``, the
XOR of the edge ids of everything emitted anchored to it. Users never touch either.
"""

from __future__ import annotations

from typing import Any

from sparkstorm.topology.fields import Fields
from sparkstorm.topology.streams import (
    CHECKPOINT_FIELDS,
    CHECKPOINT_STREAM_ID,
    SYSTEM_COMPONENT_ID,
    SYSTEM_TASK_ID,
    TICK_STREAM_ID,
)

_STATE = (
    "values",
    "fields",
    "source_component",
    "source_stream",
    "source_task",
    "anchors_to_ids",
    "_ack_val",
    "received_at",
)
"""What a held tuple keeps when a bolt's state is snapshotted."""


class Tuple:
    """A tuple received by a bolt: values, their field names, and where it came from.

    Created by the engine, in the process that runs the receiving task. A bolt may keep
    a tuple (to ack it later, possibly in a later superstep); it survives state snapshots.

    Examples
    --------
    ``tup[0]``, ``tup["word"]`` and ``tup.get("word")`` read a value;
    ``tup.values`` is the whole list.

    .. versionadded:: 0.1.0
    """

    __slots__ = (
        "_ack_val",
        "anchors_to_ids",
        "fields",
        "received_at",
        "source_component",
        "source_stream",
        "source_task",
        "values",
    )

    def __init__(
        self,
        values: list[Any],
        fields: Fields,
        source_component: str,
        source_stream: str,
        source_task: int,
        roots: dict[int, int] | None = None,
    ) -> None:
        self.values = values
        self.fields = fields
        self.source_component = source_component
        self.source_stream = source_stream
        self.source_task = source_task
        self.anchors_to_ids = roots
        self._ack_val = 0
        self.received_at = 0.0

    def __getitem__(self, key: int | str) -> Any:
        try:
            return self.values[key]  # type: ignore[index]
        except TypeError:
            if isinstance(key, str):
                return self.values[self.fields.index(key)]
            raise

    def get(self, field: str) -> Any:
        """The value of ``field``; ``KeyError`` naming the declared fields if absent."""
        return self.values[self.fields.index(field)]

    def __len__(self) -> int:
        return len(self.values)

    def is_tick(self) -> bool:
        """Whether this is a tick tuple (source ``__system``, stream ``__tick``)."""
        return self.source_stream == TICK_STREAM_ID and self.source_component == SYSTEM_COMPONENT_ID

    @property
    def message_id(self) -> dict[int, int]:
        """Root id -> edge id for every tree this tuple belongs to (empty if unanchored)."""
        return dict(self.anchors_to_ids or {})

    def __getstate__(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in _STATE)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for name, value in zip(_STATE, state, strict=True):
            setattr(self, name, value)

    def __repr__(self) -> str:
        return (
            f"Tuple(source={self.source_component}:{self.source_task}, "
            f"stream={self.source_stream!r}, values={self.values!r})"
        )


Row = tuple[int, Tuple]
"""A tuple in flight, addressed to its target task: (task id, tuple). Storm's ``AddressedTuple``."""


def tick_tuple(freq_secs: float) -> Tuple:
    """A tick tuple as Storm sends it: from ``__system`` on ``__tick``, unanchored."""
    return Tuple([freq_secs], TICK_FIELDS, SYSTEM_COMPONENT_ID, TICK_STREAM_ID, SYSTEM_TASK_ID)


TICK_FIELDS = Fields("rate_secs")


def checkpoint_tuple(action: str, argument: float) -> Tuple:
    """A checkpoint instruction from the driver, with its argument.

    ``prepare``, ``commit`` and ``rollback`` take a txid; ``stalled`` (to ackers only)
    the seconds a drain has waited.
    """
    return Tuple(
        [action, argument],
        CHECKPOINT_FIELDS,
        SYSTEM_COMPONENT_ID,
        CHECKPOINT_STREAM_ID,
        SYSTEM_TASK_ID,
    )
