"""Trident: Storm's batch API, exactly once into state, compiled onto the core API.

Examples
--------
>>> from sparkstorm.trident import Count, MemoryMapState
"""

from sparkstorm.trident.operations import (
    BaseAggregator,
    BaseFilter,
    BaseFunction,
    BaseQueryFunction,
    BaseStateUpdater,
    CombinerAggregator,
    CombinerValueUpdater,
    Count,
    Debug,
    Equals,
    FilterNull,
    FirstN,
    MapGet,
    Negate,
    ReducerAggregator,
    SnapshotGet,
    Sum,
    TupleCollectionGet,
)
from sparkstorm.trident.state import MemoryMapState
from sparkstorm.trident.tuple import TridentCollector, TridentTuple

__all__ = [
    "BaseAggregator",
    "BaseFilter",
    "BaseFunction",
    "BaseQueryFunction",
    "BaseStateUpdater",
    "CombinerAggregator",
    "CombinerValueUpdater",
    "Count",
    "Debug",
    "Equals",
    "FilterNull",
    "FirstN",
    "MapGet",
    "MemoryMapState",
    "Negate",
    "ReducerAggregator",
    "SnapshotGet",
    "Sum",
    "TridentCollector",
    "TridentTuple",
    "TupleCollectionGet",
]
