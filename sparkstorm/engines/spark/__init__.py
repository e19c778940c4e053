"""The ``spark`` engine: every superstep is one Spark job; bolts run in the executors.

- ``session``: the SparkSession (Java checked, master probed, Spark's log in a file);
- ``driver``: ``SparkEngine``, which plans, launches and collects one job per superstep;
- ``executor``: what a Spark Python worker runs for a partition of a superstep;
- ``state_source``: a topology's committed state as a DataFrame (a Python data source).

This is the only package that imports pyspark.
"""

from sparkstorm.engines.spark.driver import SparkEngine
from sparkstorm.engines.spark.session import check_java, check_master, create_session
from sparkstorm.engines.spark.state_source import CommittedStateSource, committed_state_frame

__all__ = [
    "CommittedStateSource",
    "SparkEngine",
    "check_java",
    "check_master",
    "committed_state_frame",
    "create_session",
]
