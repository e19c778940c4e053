"""Columns: Arrow spouts and bolts, every row one message with its own outcome.

Examples
--------
>>> from sparkstorm.arrow import ArrowBolt, ArrowSpout
"""

from sparkstorm.topology.columnar import ArrowBolt, ArrowSpout

__all__ = ["ArrowBolt", "ArrowSpout"]
