"""Trident's state layer: where a Trident topology keeps what it computed, exactly once.

Examples
--------
>>> from sparkstorm.trident.state import MemoryMapState, OpaqueMap, TransactionalMap
"""

from sparkstorm.trident.state.base import (
    IBackingMap,
    MapState,
    ReadOnlyMapState,
    Snapshottable,
    State,
    StateFactory,
    StateSpec,
    StateStore,
    ValueUpdater,
)
from sparkstorm.trident.state.maps import (
    CachedMap,
    NonTransactionalMap,
    OpaqueMap,
    SnapshottableMap,
    TransactionalMap,
)
from sparkstorm.trident.state.memory import LRUMemoryMapState, MemoryMapState
from sparkstorm.trident.state.values import OpaqueValue, TransactionalValue

__all__ = [
    "CachedMap",
    "IBackingMap",
    "LRUMemoryMapState",
    "MapState",
    "MemoryMapState",
    "NonTransactionalMap",
    "OpaqueMap",
    "OpaqueValue",
    "ReadOnlyMapState",
    "Snapshottable",
    "SnapshottableMap",
    "State",
    "StateFactory",
    "StateSpec",
    "StateStore",
    "TransactionalMap",
    "TransactionalValue",
    "ValueUpdater",
]
