"""Stream groupings: which tasks of each subscriber receive a tuple (Storm's ``GroupingSpecs``).

A :class:`StreamRoute` holds, for one (component, stream), every subscriber's tasks and
grouping; the emitting collector asks it for target tasks. Fields grouping uses a hash
that is stable across processes (CRC-32, not Python's salted ``hash``), so the same
key reaches the same task on every Spark executor.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Sequence
from typing import Any

from sparkstorm.topology.declarers import (
    ALL,
    DIRECT,
    FIELDS,
    GLOBAL,
    LOCAL_OR_SHUFFLE,
    NONE,
    SHUFFLE,
    StreamInfo,
)
from sparkstorm.topology.fields import Fields


def stable_hash(values: Sequence[Any], indexes: Sequence[int]) -> int:
    """A process-independent hash of ``values[i] for i in indexes``.

    Equal strings, bytes and ints hash equally everywhere; other values hash by their
    pickle, so use plain keys (str, int, tuples of them) for fields grouping.
    """
    crc = 0
    for i in indexes:
        value = values[i]
        if isinstance(value, str):
            data = value.encode("utf-8", "surrogatepass")
        elif isinstance(value, bytes):
            data = value
        elif isinstance(value, int):
            data = str(int(value)).encode()
        else:
            data = pickle.dumps(value, protocol=4)
        crc = zlib.crc32(data, crc)
    return crc


class StreamRoute:
    """Where one stream of one component goes: each subscriber's grouping and tasks."""

    __slots__ = ("_groups", "component_id", "direct", "direct_tasks", "fields", "n_fields",
                 "stream_id")

    def __init__(self, component_id: str, stream_id: str, info: StreamInfo) -> None:
        self.component_id = component_id
        self.stream_id = stream_id
        self.fields: Fields = info.fields
        self.n_fields = len(info.fields)
        self.direct = info.direct
        self.direct_tasks: set[int] = set()
        self._groups: list[tuple[str, list[int], list[int]]] = []

    def add_subscriber(self, kind: str, tasks: list[int], key: Fields | None) -> None:
        """Register a subscribing bolt's tasks under ``kind`` grouping."""
        if kind == DIRECT:
            self.direct_tasks.update(tasks)
            return
        if kind in (NONE, LOCAL_OR_SHUFFLE):
            kind = SHUFFLE
        indexes = [self.fields.index(name) for name in key] if key is not None else []
        self._groups.append((kind, sorted(tasks), indexes))

    def targets(self, values: Sequence[Any], counter: int) -> list[int]:
        """Target tasks for ``values``, in subscriber order; ``counter`` drives shuffle."""
        out: list[int] = []
        for kind, tasks, indexes in self._groups:
            if kind == SHUFFLE:
                out.append(tasks[counter % len(tasks)])
            elif kind == FIELDS:
                out.append(tasks[stable_hash(values, indexes) % len(tasks)])
            elif kind == ALL:
                out.extend(tasks)
            elif kind == GLOBAL:
                out.append(tasks[0])
        return out
