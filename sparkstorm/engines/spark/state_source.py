"""A topology's committed state as a Spark DataFrame: the ``sparkstorm-state`` data source.

Spark 4's state data source reads a Structured Streaming query's state; this is its
counterpart for a sparkstorm topology, as a Python data source: one partition per
stateful task, each read in an executor from the state provider, with the staged commits
the marker covers rolled forward in memory, exactly as
:func:`sparkstorm.state.read_committed_state` does on the driver. Nothing is written.

Rows are ``(component, task, txid, key, value)``. ``key`` and ``value`` are JSON text by
default (any value JSON cannot hold is its ``repr``); give a schema to have them typed::

    spark.read.format("sparkstorm-state").schema(
        "component string, task int, txid long, key string, value long"
    ).options(topology="word_count", provider="redis", config='{"url": "redis://..."}').load()
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StringType, StructType

from sparkstorm.config import (
    TOPOLOGY_STATE_PROVIDER,
    TOPOLOGY_STATE_PROVIDER_CONFIG,
    state_provider,
)
from sparkstorm.state.committed import read_task, reading

NAME = "sparkstorm-state"
SCHEMA = "component string, task int, txid long, key string, value string"


class _Task(InputPartition):
    """One stateful task's state: one partition."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class CommittedStateSource(DataSource):
    """``spark.read.format("sparkstorm-state")``: a topology's committed state.

    Options: ``topology``, ``provider`` and ``config`` (the provider's config as JSON),
    as the topology's own configuration has them.

    .. versionadded:: 0.2.0
    """

    @classmethod
    def name(cls) -> str:
        """The format's name."""
        return NAME

    def schema(self) -> str:
        """``component, task, txid, key, value``, the last two JSON text."""
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        """Reads the options' topology's committed state."""
        return _Reader(dict(self.options), schema)


class _Reader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        topology = options.get("topology")
        if not topology:
            msg = f"{NAME}: option 'topology' is missing: the topology's name"
            raise ValueError(msg)
        self.topology = topology
        self.conf = {
            TOPOLOGY_STATE_PROVIDER: options.get("provider", "memory"),
            TOPOLOGY_STATE_PROVIDER_CONFIG: json.loads(options.get("config", "{}")),
        }
        self.text = [isinstance(f.dataType, StringType) for f in schema.fields[3:5]]

    def partitions(self) -> list[InputPartition]:
        """One per stateful task (the user's state; a window buffer is the engine's)."""
        with reading(self.topology, self.conf) as (store, _, _):
            return [_Task(name) for name in store.tasks() if not name.endswith(":windows")]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        """The task's rows, in the executor that reads the partition."""
        assert isinstance(partition, _Task)
        with reading(self.topology, self.conf) as (store, _, _):
            state = read_task(store, partition.name)
        key_text, value_text = self.text
        for key, value in state.data.items():
            yield (
                state.component,
                state.task,
                state.txid,
                _text(key) if key_text else key,
                _text(value) if value_text else value,
            )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=repr)


def committed_state_frame(
    spark: SparkSession, topology: str, conf: dict[str, Any], schema: str | None = None
) -> DataFrame:
    """``topology``'s committed state as a DataFrame, from the provider ``conf`` names.

    ``conf`` is as :func:`sparkstorm.state.read_committed_state` takes it (the
    topology's own configuration will do); ``schema`` types ``key`` and ``value``
    (default: JSON text).

    .. versionadded:: 0.2.0
    """
    spark.dataSource.register(CommittedStateSource)
    config = conf.get(TOPOLOGY_STATE_PROVIDER_CONFIG) or {}
    reader = spark.read.format(NAME).options(
        topology=topology,
        provider=state_provider(conf),
        config=config if isinstance(config, str) else json.dumps(config),
    )
    return (reader.schema(schema) if schema else reader).load()
