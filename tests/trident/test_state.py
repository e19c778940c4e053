"""Storm's ``StateTest``, ported: the rules of opaque and transactional values and maps."""

from __future__ import annotations

from typing import Any

import pytest

from sparkstorm.trident import CombinerValueUpdater, Count
from sparkstorm.trident.state import (
    CachedMap,
    IBackingMap,
    MapState,
    MemoryMapState,
    NonTransactionalMap,
    OpaqueMap,
    OpaqueValue,
    SnapshottableMap,
    TransactionalMap,
    TransactionalValue,
)


class MemoryBackingMap(IBackingMap[Any]):
    """Storm's testing ``MemoryBackingMap``, counting the calls."""

    def __init__(self) -> None:
        self.db: dict[tuple[Any, ...], Any] = {}
        self.gets: list[list[Any]] = []

    def multi_get(self, keys: list[Any]) -> list[Any]:
        self.gets.append(list(keys))
        return [self.db.get(tuple(k)) for k in keys]

    def multi_put(self, keys: list[Any], values: list[Any]) -> None:
        self.db.update(zip(map(tuple, keys), values, strict=True))


def single_get(state: MapState[Any], key: Any) -> Any:
    return state.multi_get([[key]])[0]


def single_update(state: MapState[Any], key: Any, amount: int) -> Any:
    return state.multi_update([[key]], [CombinerValueUpdater(Count(), amount)])[0]


def test_opaque_value() -> None:
    value = OpaqueValue(8, "v1", "v0")
    again, later = value.update(8, "v2"), value.update(9, "v2")
    assert value.get(None) == "v1"
    assert value.get(100) == "v1"
    assert value.get(9) == "v1"
    assert value.get(8) == "v0"
    with pytest.raises(RuntimeError, match="batch 7 is behind the state"):
        value.get(7)
    with pytest.raises(RuntimeError, match="batch 7 is behind the state"):
        value.update(7, "v3")
    assert (value.prev, value.curr) == ("v0", "v1")
    assert (again.prev, again.curr, again.curr_txid) == ("v0", "v2", 8)
    assert again != value
    assert (later.prev, later.curr, later.curr_txid) == ("v1", "v2", 9)
    assert later != value


def test_opaque_map() -> None:
    state: MapState[Any] = OpaqueMap.build(MemoryBackingMap())
    state.begin_commit(1)
    assert single_get(state, "a") is None
    assert single_update(state, "a", 1) == 1  # intra-batch caching
    assert single_get(state, "a") == 1
    assert single_update(state, "a", 2) == 3
    assert single_get(state, "a") == 3
    state.commit(1)
    state.begin_commit(1)  # a replay of batch 1: recomputed from the value before it
    assert single_get(state, "a") is None
    assert single_update(state, "a", 2) == 2
    state.commit(1)
    state.begin_commit(2)
    assert single_get(state, "a") == 2
    assert single_update(state, "a", 3) == 5
    assert single_update(state, "a", 1) == 6
    state.commit(2)


def test_transactional_map() -> None:
    state: MapState[Any] = TransactionalMap.build(MemoryBackingMap())
    state.begin_commit(1)
    assert single_get(state, "a") is None
    assert single_update(state, "a", 1) == 1  # intra-batch caching
    assert single_update(state, "a", 2) == 3
    state.commit(1)
    state.begin_commit(1)  # a replay of batch 1: already applied, skipped
    assert single_get(state, "a") == 3
    assert single_update(state, "a", 1) == 3
    assert single_update(state, "a", 2) == 3
    state.commit(1)
    state.begin_commit(2)
    assert single_get(state, "a") == 3
    assert single_update(state, "a", 3) == 6
    assert single_update(state, "a", 1) == 7
    state.commit(2)


def test_transactional_map_stores_the_txid_beside_the_value() -> None:
    backing = MemoryBackingMap()
    state: MapState[Any] = TransactionalMap.build(backing)
    state.begin_commit(4)
    single_update(state, "a", 5)
    state.commit(4)
    assert backing.db == {("a",): TransactionalValue(4, 5)}


def test_non_transactional_map_applies_a_replay_again() -> None:
    state: MapState[Any] = NonTransactionalMap.build(MemoryBackingMap())
    for txid in (1, 1):
        state.begin_commit(txid)
        single_update(state, "a", 2)
        state.commit(txid)
    assert single_get(state, "a") == 4


def test_memory_map_state_remove() -> None:
    state: MemoryMapState[Any] = MemoryMapState("test-remove")
    state.begin_commit(1)
    state.multi_put([["a"]], [1])
    state.multi_put([["b"]], [2])
    state.commit(1)
    state.begin_commit(2)
    state.multi_remove([["a"]])
    assert single_get(state, "a") is None
    assert single_get(state, "b") == 2
    state.commit(2)
    state.begin_commit(2)
    assert single_get(state, "a") == 1
    assert single_get(state, "b") == 2
    state.multi_remove([["a"]])
    state.commit(2)
    state.begin_commit(3)
    assert single_get(state, "a") is None
    assert single_get(state, "b") == 2
    state.commit(3)
    assert sorted(state.get_tuples()) == [["b", 2]]


def test_memory_map_state_factory_gives_each_partition_its_own_map() -> None:
    factory = MemoryMapState.Factory()
    first, second = (factory.make_state({}, None, i, 2) for i in range(2))
    assert isinstance(first, MemoryMapState) and isinstance(second, MemoryMapState)
    first.begin_commit(1)
    first.multi_put([["k"]], [1])
    first.commit(1)
    assert second.multi_get([["k"]]) == [None]
    again = factory.make_state({}, None, 0, 2)
    assert isinstance(again, MemoryMapState)
    assert again.multi_get([["k"]]) == [1]


def test_snapshottable_map_keeps_one_global_value() -> None:
    state = SnapshottableMap(OpaqueMap.build(MemoryBackingMap()), ["$global"])
    state.begin_commit(1)
    assert state.get() is None
    state.set(4)
    assert state.update(CombinerValueUpdater(Count(), 3)) == 7
    state.commit(1)
    assert state.multi_get([["$global"]]) == [7]


def test_cached_map_reads_hot_keys_from_memory_and_evicts_the_oldest() -> None:
    backing = MemoryBackingMap()
    cached = CachedMap(backing, cache_size=2)
    cached.multi_put([["a"], ["b"]], [1, 2])
    assert cached.multi_get([["a"], ["b"]]) == [1, 2]
    assert backing.gets == [[]]
    cached.multi_put([["c"]], [3])  # "a" is the least recently used: evicted
    assert cached.multi_get([["a"], ["c"]]) == [1, 3]
    assert backing.gets[-1] == [["a"]]
