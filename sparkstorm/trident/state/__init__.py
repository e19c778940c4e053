"""Trident's state layer: where a Trident topology keeps what it computed, exactly once.

Examples
--------
>>> from sparkstorm.trident.state import MemoryMapState, OpaqueMap, TransactionalMap
"""

from sparkstorm.trident.state.base import (
    IBackingMap,
    MapState,
    Snapshottable,
    State,
    StateFactory,
    ValueUpdater,
)
from sparkstorm.trident.state.maps import (
    CachedMap,
    NonTransactionalMap,
    OpaqueMap,
    SnapshottableMap,
    TransactionalMap,
)
from sparkstorm.trident.state.memory import MemoryMapState
from sparkstorm.trident.state.values import OpaqueValue, TransactionalValue

__all__ = [
    "CachedMap",
    "IBackingMap",
    "MapState",
    "MemoryMapState",
    "NonTransactionalMap",
    "OpaqueMap",
    "OpaqueValue",
    "Snapshottable",
    "SnapshottableMap",
    "State",
    "StateFactory",
    "TransactionalMap",
    "TransactionalValue",
    "ValueUpdater",
]
