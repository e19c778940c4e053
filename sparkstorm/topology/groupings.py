"""Stream groupings: which tasks of each subscriber receive a tuple (Storm's ``GroupingSpecs``).

A :class:`StreamRoute` holds, for one (component, stream), every subscriber's tasks and
grouping; the emitting collector asks it for target tasks. Fields grouping uses a hash
that is stable across processes (CRC-32, not Python's salted ``hash``), so the same
key reaches the same task on every Spark executor.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Callable, Sequence
from typing import Any

from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.declarers import (
    ALL,
    CUSTOM,
    DIRECT,
    GLOBAL,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    SHUFFLE,
    GlobalStreamId,
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
        crc = zlib.crc32(_key_bytes(values[i]), crc)
    return crc


def _key_bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, bytes):
        return value
    if isinstance(value, int):
        return str(int(value)).encode()
    return pickle.dumps(value, protocol=4)


Chooser = Callable[[Sequence[Any], int], list[int]]


def _chooser(kind: str, tasks: list[int], indexes: list[int]) -> Chooser:
    """The target function of one subscriber, specialised for the common cases."""
    n = len(tasks)
    if kind == SHUFFLE:
        return lambda values, counter: [tasks[counter % n]]
    if kind == ALL:
        return lambda values, counter: list(tasks)
    if kind == GLOBAL:
        return lambda values, counter: [tasks[0]]
    if kind == PARTIAL_KEY:
        return _two_choices(tasks, indexes)
    if len(indexes) == 1:
        (i,) = indexes
        crc32 = zlib.crc32

        def one_key(values: Sequence[Any], counter: int) -> list[int]:
            value = values[i]
            data = value.encode() if type(value) is str else _key_bytes(value)
            return [tasks[crc32(data) % n]]

        return one_key
    return lambda values, counter: [tasks[stable_hash(values, indexes) % n]]


def _two_choices(tasks: list[int], indexes: list[int]) -> Chooser:
    """Partial key grouping: of the key's two candidate tasks, the one sent fewer so far."""
    n, sent = len(tasks), dict.fromkeys(tasks, 0)

    def choose(values: Sequence[Any], counter: int) -> list[int]:
        first = stable_hash(values, indexes)
        second = zlib.crc32(first.to_bytes(4, "little"), 0x9E3779B9)
        a, b = tasks[first % n], tasks[second % n]
        chosen = a if sent[a] <= sent[b] else b
        sent[chosen] += 1
        return [chosen]

    return choose


def custom_chooser(
    grouping: Any, tasks: list[int], source: GlobalStreamId, task_id: int | None, context: Any
) -> Chooser:
    """A user's ``CustomStreamGrouping``: prepared once, asked per tuple, answers checked."""
    prepare = getattr(grouping, "prepare", None)
    if callable(prepare):
        prepare(context, source, list(tasks))
    allowed, choose_tasks = frozenset(tasks), grouping.choose_tasks

    def choose(values: Sequence[Any], counter: int) -> list[int]:
        chosen = list(choose_tasks(task_id, list(values)))
        if not allowed.issuperset(chosen):
            msg = (
                f"custom grouping {type(grouping).__name__} on stream {source.stream_id!r} "
                f"of {source.component_id!r} chose tasks {chosen}; it may choose only "
                f"among {sorted(allowed)}"
            )
            raise InvalidTopologyError(msg, component=source.component_id, stream=source.stream_id)
        return chosen

    return choose


def _no_targets(values: Sequence[Any], counter: int) -> list[int]:
    return []


class StreamRoute:
    """Where one stream of one component goes: each subscriber's grouping and tasks."""

    __slots__ = (
        "_choosers",
        "component_id",
        "direct",
        "direct_tasks",
        "emitted",
        "fields",
        "n_fields",
        "stream_id",
        "subscribed",
        "subscribers",
        "targets",
        "transferred",
    )

    def __init__(self, component_id: str, stream_id: str, info: StreamInfo) -> None:
        self.component_id = component_id
        self.stream_id = stream_id
        self.fields: Fields = info.fields
        self.n_fields = len(info.fields)
        self.direct = info.direct
        self.direct_tasks: set[int] = set()
        self._choosers: list[Chooser] = []
        self.subscribers: list[tuple[str, list[int], list[int], Chooser]] = []
        """(grouping, tasks, grouped field indexes, chooser) of each subscriber, for a
        record batch's rows (``column_routes``)."""
        self.targets: Chooser = _no_targets
        """Target tasks for ``values``, in subscriber order; ``counter`` drives shuffle."""
        self.subscribed = False
        """Whether any bolt subscribes other than by direct grouping."""
        self.emitted = 0
        """Emits on this stream by the task that holds the route (Storm UI's output stats)."""
        self.transferred = 0
        """Tuples those emits sent to subscribing tasks."""

    def add_subscriber(
        self, kind: str, tasks: list[int], key: Fields | None, chooser: Chooser | None = None
    ) -> None:
        """Register a subscribing bolt's tasks under ``kind`` grouping (``chooser``: custom)."""
        if kind == DIRECT:
            self.direct_tasks.update(tasks)
            return
        if kind in (NONE, LOCAL_OR_SHUFFLE):
            kind = SHUFFLE
        indexes = [self.fields.index(name) for name in key] if key is not None else []
        chosen = chooser or _chooser(kind, sorted(tasks), indexes)
        self._choosers.append(chosen)
        self.subscribers.append((CUSTOM if chooser else kind, sorted(tasks), indexes, chosen))
        self.subscribed = True
        choosers = list(self._choosers)
        if len(choosers) == 1:
            self.targets = choosers[0]
        else:
            self.targets = lambda values, counter: [
                task for choose in choosers for task in choose(values, counter)
            ]
