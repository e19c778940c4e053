"""Columns: Arrow spouts and bolts, every row one message with its own outcome.

``KafkaArrowSpout`` and ``KafkaArrowBolt`` (Kafka in columns) need the connectors'
packages (``pip install 'sparkstorm[connectors]'``); they are imported when first named.

Examples
--------
>>> from sparkstorm.arrow import ArrowBolt, ArrowSpout
"""

from __future__ import annotations

from typing import Any

from sparkstorm.topology.columnar import (
    ArrowBolt,
    ArrowSpout,
    ArrowWindow,
    StatefulArrowBolt,
    StatefulWindowedArrowBolt,
    WindowedArrowBolt,
)

__all__ = [
    "ArrowBolt",
    "ArrowSpout",
    "ArrowWindow",
    "KafkaArrowBolt",
    "KafkaArrowSpout",
    "StatefulArrowBolt",
    "StatefulWindowedArrowBolt",
    "WindowedArrowBolt",
]


def __getattr__(name: str) -> Any:
    """``KafkaArrowSpout`` and ``KafkaArrowBolt``, from the Kafka connector, on first use."""
    if name in ("KafkaArrowSpout", "KafkaArrowBolt"):
        from sparkstorm.connectors import kafka_arrow

        return getattr(kafka_arrow, name)
    msg = f"module 'sparkstorm.arrow' has no attribute {name!r}"
    raise AttributeError(msg)
