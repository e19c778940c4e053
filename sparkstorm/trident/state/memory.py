"""``MemoryMapState``: an opaque map state in memory, for tests and small state.

Each partition's values are held by its task and, written through at every commit, in
the run's memory in the driver (``control/run_memory.py``): a lost worker, a restarted
stage or a rebalance loses none of them, since the new task reads its partition back
(Storm's is lost with its worker). They last as long as the run (the ``LocalCluster``):
a new run starts empty. Keep large states in Redis or PostgreSQL: the driver holds a
copy of every value.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

from typing_extensions import override

from sparkstorm.control.run_memory import RunMemoryClient, run_memory
from sparkstorm.trident.state.base import (
    MEMORY,
    IBackingMap,
    Key,
    MapState,
    Snapshottable,
    State,
    StateFactory,
    StateStore,
    ValueUpdater,
)
from sparkstorm.trident.state.maps import OpaqueMap, SnapshottableMap
from sparkstorm.trident.state.values import OpaqueValue, as_key

T = TypeVar("T")

GLOBAL_KEY = ["$MEMORY-MAP-STATE-GLOBAL$"]
"""The key of a global (ungrouped) aggregate's one value."""


class _MemoryBacking(IBackingMap[OpaqueValue[Any]]):
    """A partition's values here, written through to the run's memory, read back from it."""

    def __init__(self, memory: RunMemoryClient, space: str) -> None:
        self.memory, self.space = memory, space
        kept = memory.read(space)  # (txid, curr, prev): a tuple pickles 5x faster
        self.db: dict[tuple[Any, ...], OpaqueValue[Any]] = {
            key: OpaqueValue(*value) for key, value in kept.items()
        }

    def __getstate__(self) -> dict[str, Any]:
        return {"memory": self.memory, "space": self.space}  # a copy reads the values anew

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["memory"], state["space"])  # type: ignore[misc]

    @override
    def multi_get(self, keys: list[Key]) -> list[OpaqueValue[Any] | None]:
        db = self.db
        return [db.get(as_key(key)) for key in keys]

    @override
    def multi_put(self, keys: list[Key], values: list[OpaqueValue[Any]]) -> None:
        puts = dict(zip(map(as_key, keys), values, strict=True))
        kept = {key: (v.curr_txid, v.curr, v.prev) for key, v in puts.items()}
        self.memory.write(self.space, kept)  # the driver's copy first: a failure changes none
        self.db.update(puts)

    def multi_remove(self, keys: list[Key]) -> None:
        gone = [as_key(key) for key in keys]
        self.memory.write(self.space, {}, gone)
        for key in gone:
            self.db.pop(key, None)


class MemoryMapState(MapState[T], Snapshottable[T], Generic[T]):
    """An opaque map state held in memory; also a snapshot (one global value).

    Examples
    --------
    >>> state = MemoryMapState.Factory().make_state({}, None, 0, 1)
    >>> state.begin_commit(1); state.multi_put([["a"]], [3]); state.commit(1)
    >>> state.multi_get([["a"], ["b"]])
    [3, None]

    .. versionadded:: 0.3.0
    """

    def __init__(self, db_id: str, memory: RunMemoryClient | None = None) -> None:
        self._backing = self._make_backing(memory or run_memory({}), f"memory-map:{db_id}")
        self._delegate: SnapshottableMap[T] = SnapshottableMap(OpaqueMap(self._backing), GLOBAL_KEY)
        self._removed: list[Key] = []
        self._txid: int | None = None

    class Factory(StateFactory):
        """Makes one :class:`MemoryMapState` per partition, kept for the run.

        .. versionadded:: 0.3.0
        """

        def __init__(self) -> None:
            self.id = uuid.uuid4().hex

        @override
        def make_state(
            self, conf: dict[str, Any], metrics: Any, partition_index: int, num_partitions: int
        ) -> State:
            return MemoryMapState(f"{self.id}-{partition_index}", run_memory(conf))

        @override
        def state_type(self) -> str:
            return "opaque"

        @override
        def store(self) -> StateStore:
            return MEMORY

        @override
        def committed_items(self) -> Iterator[tuple[list[Any], Any]]:
            msg = (
                "MemoryMapState lives in the run's memory and is gone with the run: it "
                "cannot be read from outside; query it with DRPC while the topology runs, "
                "or persist into RedisMapState or PostgresMapState"
            )
            raise NotImplementedError(msg)

    def _make_backing(self, memory: RunMemoryClient, space: str) -> _MemoryBacking:
        return _MemoryBacking(memory, space)

    @override
    def begin_commit(self, txid: int | None) -> None:
        self._delegate.begin_commit(txid)
        if txid is None or txid != self._txid:
            # keys removed by the previous batch are null before and after it: drop them
            self._backing.multi_remove(self._removed)
        self._removed = []
        self._txid = txid

    @override
    def commit(self, txid: int | None) -> None:
        self._delegate.commit(txid)

    @override
    def multi_get(self, keys: list[Key]) -> list[T | None]:
        return self._delegate.multi_get(keys)

    @override
    def multi_update(self, keys: list[Key], updaters: list[ValueUpdater[T]]) -> list[T]:
        return self._delegate.multi_update(keys, updaters)

    @override
    def multi_put(self, keys: list[Key], values: list[T]) -> None:
        self._delegate.multi_put(keys, values)

    def multi_remove(self, keys: list[Key]) -> None:
        """Remove ``keys``: null for this batch, gone once the next batch begins."""
        self.multi_put(keys, [None] * len(keys))  # type: ignore[list-item]
        self._removed.extend(keys)

    @override
    def get(self) -> T | None:
        return self._delegate.get()

    @override
    def update(self, updater: ValueUpdater[T]) -> T:
        return self._delegate.update(updater)

    @override
    def set(self, value: T) -> None:
        self._delegate.set(value)

    def get_tuples(self) -> Iterator[list[Any]]:
        """Every key's values followed by its current value (for ``TupleCollectionGet``)."""
        for key, value in list(self._backing.db.items()):
            yield [*key, value.curr]


class _LRUBacking(_MemoryBacking):
    """A partition's values, at most ``max_size``: the least recently used go first."""

    def __init__(self, memory: RunMemoryClient, space: str, max_size: int) -> None:
        super().__init__(memory, space)
        self.max_size = max_size
        self.db = OrderedDict(self.db)

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "max_size": self.max_size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["memory"], state["space"], state["max_size"])  # type: ignore[misc]

    @override
    def multi_get(self, keys: list[Key]) -> list[OpaqueValue[Any] | None]:
        found = super().multi_get(keys)
        for key in keys:
            if as_key(key) in self.db:
                self.db.move_to_end(as_key(key))  # type: ignore[attr-defined]
        return found

    @override
    def multi_put(self, keys: list[Key], values: list[OpaqueValue[Any]]) -> None:
        super().multi_put(keys, values)
        for key in keys:
            self.db.move_to_end(as_key(key))  # type: ignore[attr-defined]
        over = len(self.db) - self.max_size
        if over > 0:
            self.multi_remove([list(key) for key in list(self.db)[:over]])


class LRUMemoryMapState(MemoryMapState[T]):
    """A :class:`MemoryMapState` of at most ``max_size`` keys a partition (Storm's).

    The least recently read or written key is dropped first: a cache, for tests of
    state that may forget.

    .. versionadded:: 0.4.0
    """

    def __init__(self, max_size: int, db_id: str, memory: RunMemoryClient | None = None) -> None:
        self._max_size = max_size
        super().__init__(db_id, memory)

    @override
    def _make_backing(self, memory: RunMemoryClient, space: str) -> _MemoryBacking:
        return _LRUBacking(memory, space, self._max_size)

    class Factory(StateFactory):
        """Makes one :class:`LRUMemoryMapState` per partition, kept for the run.

        .. versionadded:: 0.4.0
        """

        def __init__(self, max_size: int) -> None:
            if not isinstance(max_size, int) or max_size < 1:
                msg = f"LRUMemoryMapState.Factory({max_size!r}): give a positive int"
                raise ValueError(msg)
            self.max_size = max_size
            self.id = uuid.uuid4().hex

        @override
        def make_state(
            self, conf: dict[str, Any], metrics: Any, partition_index: int, num_partitions: int
        ) -> State:
            return LRUMemoryMapState(
                self.max_size, f"{self.id}-{partition_index}", run_memory(conf)
            )

        @override
        def state_type(self) -> str:
            return "opaque"

        @override
        def store(self) -> StateStore:
            return MEMORY
