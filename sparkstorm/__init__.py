"""sparkstorm: Apache Storm's guaranteed message processing for Python, on Apache Spark."""

from sparkstorm._types import FailReason
from sparkstorm.config import Config
from sparkstorm.control.run import RunResult, run
from sparkstorm.errors import (
    ComponentStateError,
    FailedException,
    IdleTimeoutError,
    InvalidTopologyError,
    ReportedFailedException,
    RunAborted,
    SparkStormError,
    TopologyHalted,
)
from sparkstorm.reliability.collectors import BasicOutputCollector, OutputCollector
from sparkstorm.reliability.spout_collector import SpoutOutputCollector
from sparkstorm.state import KeyValueState
from sparkstorm.topology.builder import Topology, TopologyBuilder
from sparkstorm.topology.components import (
    BasicBolt,
    BasicStatefulBolt,
    Bolt,
    CompletableSpout,
    Spout,
    StatefulBolt,
)
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import BoltDeclarer, OutputFieldsDeclarer, SpoutDeclarer
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.hooks import BaseTaskHook
from sparkstorm.topology.storm_time import Time
from sparkstorm.topology.tuple import Tuple
from sparkstorm.topology.windowing import (
    Count,
    Duration,
    StatefulWindowedBolt,
    TupleWindow,
    WindowedBolt,
)

__version__ = "0.1.0"

__all__ = [
    "BaseTaskHook",
    "BasicBolt",
    "BasicOutputCollector",
    "BasicStatefulBolt",
    "Bolt",
    "BoltDeclarer",
    "CompletableSpout",
    "ComponentStateError",
    "Config",
    "Count",
    "Duration",
    "FailReason",
    "FailedException",
    "Fields",
    "IdleTimeoutError",
    "InvalidTopologyError",
    "KeyValueState",
    "OutputCollector",
    "OutputFieldsDeclarer",
    "ReportedFailedException",
    "RunAborted",
    "RunResult",
    "SparkStormError",
    "Spout",
    "SpoutDeclarer",
    "SpoutOutputCollector",
    "StatefulBolt",
    "StatefulWindowedBolt",
    "Time",
    "Topology",
    "TopologyBuilder",
    "TopologyContext",
    "TopologyHalted",
    "Tuple",
    "TupleWindow",
    "WindowedBolt",
    "run",
]
