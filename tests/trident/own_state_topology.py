"""A Trident word count into a state of the user's own: Storm's API, nothing else.

``FileCounts`` is what a Storm user writes for a store sparkstorm does not know (a file
here; Cassandra or a service in real life): a ``StateFactory`` whose ``make_state`` wraps
an ``IBackingMap`` in Storm's ``TransactionalMap`` or ``OpaqueMap``. It does not say
where it keeps its values (no ``store()``), and the topology names no
``topology.state.provider``: the defaults must keep it exact. Configured by environment
variables: ``OWN_NAME`` (the Redis stream and the run), ``OWN_DIR`` (the folder of the
state's files), ``OWN_KIND`` (``transactional`` or ``opaque``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sparkstorm import Config, Fields
from sparkstorm.connectors.redis_streams_trident import (
    RedisStreamOpaqueTridentSpout,
    RedisStreamTridentSpout,
)
from sparkstorm.trident import Count, TridentTopology
from sparkstorm.trident.state import (
    IBackingMap,
    OpaqueMap,
    OpaqueValue,
    StateFactory,
    TransactionalMap,
    TransactionalValue,
)
from tests.trident.ops import SplitData
from tests.trident.proof_topology import REDIS


class FileBackingMap(IBackingMap[Any]):
    """One JSON file per partition, replaced whole at every ``multi_put``."""

    def __init__(self, path: Path, opaque: bool) -> None:
        self.path, self.opaque = path, opaque

    def _read(self) -> dict[str, Any]:
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def multi_get(self, keys: list[Any]) -> list[Any]:
        stored = self._read()
        return [self._value(stored.get(json.dumps(list(k)))) for k in keys]

    def multi_put(self, keys: list[Any], values: list[Any]) -> None:
        stored = self._read()
        for key, value in zip(keys, values, strict=True):
            stored[json.dumps(list(key))] = value.__dict__
        fresh = self.path.with_suffix(".tmp")
        fresh.write_text(json.dumps(stored))
        fresh.replace(self.path)

    def _value(self, raw: dict[str, Any] | None) -> Any:
        if raw is None:
            return None
        return OpaqueValue(**raw) if self.opaque else TransactionalValue(**raw)


class FileCounts(StateFactory):
    def __init__(self, folder: str, kind: str) -> None:
        self.folder, self.kind = folder, kind

    def make_state(
        self, conf: dict[str, Any], metrics: Any, partition_index: int, num_partitions: int
    ) -> Any:
        path = Path(self.folder) / f"counts-{partition_index}.json"
        backing = FileBackingMap(path, self.kind == "opaque")
        return (
            OpaqueMap.build(backing) if self.kind == "opaque" else TransactionalMap.build(backing)
        )


def counts(folder: str) -> dict[str, int]:
    """The committed counts, read from the state's files."""
    found: dict[str, int] = {}
    for path in Path(folder).glob("counts-*.json"):
        for key, value in json.loads(path.read_text()).items():
            found[json.loads(key)[0]] = value["curr" if "curr" in value else "val"]
    return found


def topology() -> tuple[Any, Config]:
    name, kind = os.environ["OWN_NAME"], os.environ.get("OWN_KIND", "transactional")
    spout: Any = (
        RedisStreamOpaqueTridentSpout(REDIS, name, max_batch_size=50)
        if kind == "opaque"
        else RedisStreamTridentSpout(REDIS, name, max_batch_size=50)
    )
    trident = TridentTopology()
    (
        trident.new_stream("stream", spout)
        .each(Fields("data"), SplitData(), Fields("word"))
        .parallelism_hint(2)
        .group_by(Fields("word"))
        .persistent_aggregate(FileCounts(os.environ["OWN_DIR"], kind), Count(), Fields("count"))
        .parallelism_hint(2)
    )
    conf = Config()
    conf.set_max_spout_pending(3)
    return trident.build(), conf
