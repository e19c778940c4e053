"""Trident: Storm's batch API, exactly once into state, compiled onto the core API.

Examples
--------
>>> from sparkstorm.trident import Count, MemoryMapState
"""

from sparkstorm.errors import BatchFailedTooOften
from sparkstorm.trident.chained import ChainedAggregatorDeclarer
from sparkstorm.trident.columnar import BaseArrowFilter, BaseArrowFunction
from sparkstorm.trident.comparisons import Max, MaxWithComparator, Min, MinWithComparator
from sparkstorm.trident.coordinated import (
    BatchCoordinator,
    Emitter,
    ITridentSpout,
    TransactionAttempt,
)
from sparkstorm.trident.drpc import DRPCExecutionError, LocalDRPC
from sparkstorm.trident.grouped import GroupedStream, TridentState
from sparkstorm.trident.multireduce import GroupedMultiReducer, JoinType, MultiReducer
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
from sparkstorm.trident.reading import read_trident_state, trident_state_frame
from sparkstorm.trident.spouts import (
    FeederBatchSpout,
    FeederCommitterBatchSpout,
    FixedBatchSpout,
    IBatchSpout,
    ICommitterBatchSpout,
    IPositionedBatchSpout,
)
from sparkstorm.trident.state import LRUMemoryMapState, MemoryMapState, StateSpec
from sparkstorm.trident.stream import Stream
from sparkstorm.trident.topology import TridentTopology
from sparkstorm.trident.tuple import TridentCollector, TridentTuple
from sparkstorm.trident.windowing import (
    InMemoryWindowsStoreFactory,
    RedisWindowsStoreFactory,
    SlidingCountWindow,
    SlidingDurationWindow,
    TumblingCountWindow,
    TumblingDurationWindow,
    WindowConfig,
    WindowsStore,
    WindowsStoreFactory,
)

__all__ = [
    "BaseAggregator",
    "BaseArrowFilter",
    "BaseArrowFunction",
    "BaseFilter",
    "BaseFunction",
    "BaseQueryFunction",
    "BaseStateUpdater",
    "BatchCoordinator",
    "BatchFailedTooOften",
    "ChainedAggregatorDeclarer",
    "CombinerAggregator",
    "CombinerValueUpdater",
    "Count",
    "DRPCExecutionError",
    "Debug",
    "Emitter",
    "Equals",
    "FeederBatchSpout",
    "FeederCommitterBatchSpout",
    "FilterNull",
    "FirstN",
    "FixedBatchSpout",
    "GroupedMultiReducer",
    "GroupedStream",
    "IBatchSpout",
    "ICommitterBatchSpout",
    "IPositionedBatchSpout",
    "ITridentSpout",
    "InMemoryWindowsStoreFactory",
    "JoinType",
    "LRUMemoryMapState",
    "LocalDRPC",
    "MapGet",
    "Max",
    "MaxWithComparator",
    "MemoryMapState",
    "Min",
    "MinWithComparator",
    "MultiReducer",
    "Negate",
    "RedisWindowsStoreFactory",
    "ReducerAggregator",
    "SlidingCountWindow",
    "SlidingDurationWindow",
    "SnapshotGet",
    "StateSpec",
    "Stream",
    "Sum",
    "TransactionAttempt",
    "TridentCollector",
    "TridentState",
    "TridentTopology",
    "TridentTuple",
    "TumblingCountWindow",
    "TumblingDurationWindow",
    "TupleCollectionGet",
    "WindowConfig",
    "WindowsStore",
    "WindowsStoreFactory",
    "read_trident_state",
    "trident_state_frame",
]
