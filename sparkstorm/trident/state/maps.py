"""Map states over a backing map: transactional, opaque and non-transactional (Storm's rules).

- :class:`TransactionalMap` skips an update whose stored txid is the batch's own: a
  replayed batch of a transactional spout has the same tuples, so it was applied already.
- :class:`OpaqueMap` recomputes from ``prev`` when the stored txid is the batch's own: a
  replayed batch of an opaque spout may have other tuples, so it is applied again on the
  value from before its first attempt.
- :class:`NonTransactionalMap` applies every update: a replay counts twice.

Within one batch, a key written once is read back from a cache, so that a second update
of the same key in the same batch builds on the first one (Storm's ``CachedBatchReadsMap``).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Generic, TypeVar

from typing_extensions import override

from sparkstorm.trident.state.base import (
    IBackingMap,
    Key,
    MapState,
    ReplaceUpdater,
    Snapshottable,
    ValueUpdater,
)
from sparkstorm.trident.state.values import OpaqueValue, TransactionalValue, as_key

T = TypeVar("T")
V = TypeVar("V")


class _BatchReads(Generic[V]):
    """A backing map whose values written in the current batch are read back from memory."""

    def __init__(self, backing: IBackingMap[V]) -> None:
        self.backing = backing
        self.written: dict[tuple[Any, ...], V] = {}

    def multi_get(self, keys: list[Key]) -> list[tuple[V | None, bool]]:
        """Each key's value, and whether it was written in this batch."""
        stored = self.backing.multi_get(keys)
        written = self.written
        return [
            (written[k], True) if (k := as_key(key)) in written else (value, False)
            for key, value in zip(keys, stored, strict=True)
        ]

    def multi_put(self, keys: list[Key], values: list[V]) -> None:
        """Write through, and remember what this batch wrote."""
        self.backing.multi_put(keys, values)
        self.written.update(zip(map(as_key, keys), values, strict=True))

    def reset(self) -> None:
        self.written.clear()


class TransactionalMap(MapState[T]):
    """A map state for a transactional spout: a batch's update is applied once.

    .. versionadded:: 0.3.0
    """

    def __init__(self, backing: IBackingMap[TransactionalValue[T]]) -> None:
        self._backing = _BatchReads(backing)
        self._txid: int | None = None

    @classmethod
    def build(cls, backing: IBackingMap[TransactionalValue[T]]) -> TransactionalMap[T]:
        """Storm's factory method."""
        return cls(backing)

    @override
    def multi_get(self, keys: list[Key]) -> list[T | None]:
        return [None if v is None else v.val for v, _ in self._backing.multi_get(keys)]

    @override
    def multi_update(self, keys: list[Key], updaters: list[ValueUpdater[T]]) -> list[T]:
        txid = self._txid
        new_keys: list[Key] = []
        new_values: list[TransactionalValue[T]] = []
        result: list[T] = []
        for key, (stored, cached), updater in zip(
            keys, self._backing.multi_get(keys), updaters, strict=True
        ):
            if stored is not None and not cached and txid is not None and stored.txid == txid:
                result.append(stored.val)  # this batch was applied before its replay
                continue
            new = TransactionalValue(txid, updater.update(None if stored is None else stored.val))
            result.append(new.val)
            new_keys.append(key)
            new_values.append(new)
        if new_keys:
            self._backing.multi_put(new_keys, new_values)
        return result

    @override
    def multi_put(self, keys: list[Key], values: list[T]) -> None:
        self._backing.multi_put(keys, [TransactionalValue(self._txid, v) for v in values])

    @override
    def begin_commit(self, txid: int | None) -> None:
        self._txid = txid
        self._backing.reset()

    @override
    def commit(self, txid: int | None) -> None:
        self._txid = None
        self._backing.reset()


class OpaqueMap(MapState[T]):
    """A map state for an opaque spout: a replayed batch is applied on the value before it.

    .. versionadded:: 0.3.0
    """

    def __init__(self, backing: IBackingMap[OpaqueValue[T]]) -> None:
        self._backing = _BatchReads(backing)
        self._txid: int | None = None

    @classmethod
    def build(cls, backing: IBackingMap[OpaqueValue[T]]) -> OpaqueMap[T]:
        """Storm's factory method."""
        return cls(backing)

    def _current(self, stored: OpaqueValue[T] | None, cached: bool) -> T | None:
        if stored is None:
            return None
        return stored.curr if cached else stored.get(self._txid)

    @override
    def multi_get(self, keys: list[Key]) -> list[T | None]:
        return [self._current(v, cached) for v, cached in self._backing.multi_get(keys)]

    @override
    def multi_update(self, keys: list[Key], updaters: list[ValueUpdater[T]]) -> list[T]:
        txid = self._txid
        result: list[T] = []
        new_values: list[OpaqueValue[T]] = []
        for (stored, cached), updater in zip(self._backing.multi_get(keys), updaters, strict=True):
            value = updater.update(self._current(stored, cached))
            result.append(value)
            new_values.append(
                OpaqueValue(txid, value) if stored is None else stored.update(txid, value)
            )
        self._backing.multi_put(keys, new_values)
        return result

    @override
    def multi_put(self, keys: list[Key], values: list[T]) -> None:
        self.multi_update(keys, [ReplaceUpdater(v) for v in values])

    @override
    def begin_commit(self, txid: int | None) -> None:
        self._txid = txid
        self._backing.reset()

    @override
    def commit(self, txid: int | None) -> None:
        self._txid = None
        self._backing.reset()


class NonTransactionalMap(MapState[T]):
    """A map state that applies every update, replays too (at-least-once counts).

    .. versionadded:: 0.3.0
    """

    def __init__(self, backing: IBackingMap[T]) -> None:
        self._backing = backing

    @classmethod
    def build(cls, backing: IBackingMap[T]) -> NonTransactionalMap[T]:
        """Storm's factory method."""
        return cls(backing)

    @override
    def multi_get(self, keys: list[Key]) -> list[T | None]:
        return self._backing.multi_get(keys)

    @override
    def multi_update(self, keys: list[Key], updaters: list[ValueUpdater[T]]) -> list[T]:
        stored = self._backing.multi_get(keys)
        result = [u.update(v) for v, u in zip(stored, updaters, strict=True)]
        self._backing.multi_put(keys, result)
        return result

    @override
    def multi_put(self, keys: list[Key], values: list[T]) -> None:
        self._backing.multi_put(keys, values)

    @override
    def begin_commit(self, txid: int | None) -> None:
        pass

    @override
    def commit(self, txid: int | None) -> None:
        pass


class CachedMap(IBackingMap[V]):
    """A backing map that keeps the ``cache_size`` most recently used values in memory.

    Put it under a map state whose task is the only writer of its keys (a partitioned
    persist): reads of hot keys then skip the store.

    .. versionadded:: 0.3.0
    """

    def __init__(self, delegate: IBackingMap[V], cache_size: int) -> None:
        self.delegate = delegate
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[Any, ...], V | None] = OrderedDict()

    @override
    def multi_get(self, keys: list[Key]) -> list[V | None]:
        cache = self._cache
        missing = [key for key in keys if as_key(key) not in cache]
        found = dict(zip(map(as_key, missing), self.delegate.multi_get(missing), strict=True))
        result = []
        for key in map(as_key, keys):
            if key in found:
                self._remember(key, found[key])
            else:
                cache.move_to_end(key)
            result.append(cache[key])
        return result

    @override
    def multi_put(self, keys: list[Key], values: list[V]) -> None:
        for key, value in zip(keys, values, strict=True):
            self._remember(as_key(key), value)
        self.delegate.multi_put(keys, values)

    def _remember(self, key: tuple[Any, ...], value: V | None) -> None:
        self._cache[key] = value
        self._cache.move_to_end(key)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


class SnapshottableMap(MapState[T], Snapshottable[T]):
    """A map state that also holds one global value under ``snapshot_key``.

    .. versionadded:: 0.3.0
    """

    def __init__(self, delegate: MapState[T], snapshot_key: Key) -> None:
        self.delegate = delegate
        self._keys: list[Key] = [list(snapshot_key)]

    @override
    def multi_get(self, keys: list[Key]) -> list[T | None]:
        return self.delegate.multi_get(keys)

    @override
    def multi_update(self, keys: list[Key], updaters: list[ValueUpdater[T]]) -> list[T]:
        return self.delegate.multi_update(keys, updaters)

    @override
    def multi_put(self, keys: list[Key], values: list[T]) -> None:
        self.delegate.multi_put(keys, values)

    @override
    def begin_commit(self, txid: int | None) -> None:
        self.delegate.begin_commit(txid)

    @override
    def commit(self, txid: int | None) -> None:
        self.delegate.commit(txid)

    @override
    def get(self) -> T | None:
        return self.multi_get(self._keys)[0]

    @override
    def update(self, updater: ValueUpdater[T]) -> T:
        return self.multi_update(self._keys, [updater])[0]

    @override
    def set(self, value: T) -> None:
        self.multi_put(self._keys, [value])
