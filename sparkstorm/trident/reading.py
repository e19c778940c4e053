"""A Trident topology's committed state, read from outside: its maps and its last txid.

The maps live in the stores their factories name (a Redis hash, a PostgreSQL table), so
they are found through the topology itself: ``sparkstorm state NAME --from FILE`` and
:func:`read_trident_state` take it. The last committed txid comes from the checkpoint
store, as the coordinator keeps it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sparkstorm.config import TOPOLOGY_NAME, resolve
from sparkstorm.topology.builder import Topology
from sparkstorm.trident.bolt import TridentBolt
from sparkstorm.trident.nodes import PersistNode
from sparkstorm.trident.progress import Progress
from sparkstorm.trident.state.base import StateFactory

FRAME_SCHEMA = "state string, key string, value string"


@dataclass
class TridentMap:
    """One persisted state: the operation's name, its factory, and what it holds."""

    name: str
    factory: StateFactory
    items: list[tuple[list[Any], Any]] = field(default_factory=list)
    unreadable: str | None = None
    """Why it cannot be read from outside (a ``MemoryMapState``), if it cannot."""

    @property
    def where(self) -> str:
        """The factory, its kind and its store, as the CLI names them."""
        f = self.factory
        store = f.store()
        place = store.shown.partition(" at ")[2] if store is not None else ""
        parts = (type(f).__qualname__, f.state_type(), place and f"at {place}")
        return " ".join(str(p) for p in parts if p)


@dataclass
class CommittedTridentState:
    """A Trident topology's committed state: the last committed txid and its maps."""

    topology: str
    txid: int
    maps: list[TridentMap]
    progress_where: str = ""
    """Where its progress was read."""
    progress_provider: str = ""
    """The kind of store it was read from (``memory``: a run's, which ends with the run)."""

    def of(self, name: str) -> dict[tuple[Any, ...], Any]:
        """The map ``name``: key (its group's values, a tuple) -> value."""
        for m in self.maps:
            if m.name == name:
                return {tuple(key): value for key, value in m.items}
        known = ", ".join(m.name for m in self.maps)
        msg = f"topology {self.topology!r} persists no state named {name!r} ({known})"
        raise KeyError(msg)


def persisted_states(topology: Topology) -> list[tuple[str, StateFactory]]:
    """The states a built Trident topology persists into, by operation name."""
    found = []
    for spec in topology.bolts:
        if isinstance(spec.obj, TridentBolt):
            found += [(n.label, n.factory) for n in spec.obj.nodes if isinstance(n, PersistNode)]
    return found


def read_trident_state(
    topology: Topology, conf: dict[str, Any] | None = None, name: str | None = None
) -> CommittedTridentState:
    """The committed maps of ``topology``, and its last committed txid.

    The txid is read where the topology keeps its progress (``trident/progress.py``): the
    store of its states, or the one ``conf`` names; 0 before the first commit, or where
    it is kept in the run's memory. ``name`` is the run's (``--name``, else the file's
    stem), as the progress is kept under it when ``topology.state.provider`` is named.

    .. versionadded:: 0.3.0
    """
    resolved = resolve(conf)
    resolved[TOPOLOGY_NAME] = name or resolved[TOPOLOGY_NAME] or "topology"
    maps = []
    states = persisted_states(topology)
    for label, factory in states:
        try:
            maps.append(TridentMap(label, factory, list(factory.committed_items())))
        except NotImplementedError as exc:
            maps.append(TridentMap(label, factory, unreadable=str(exc)))
    progress = Progress.open(resolved, states)
    return CommittedTridentState(
        resolved[TOPOLOGY_NAME], progress.committed(), maps, progress.where, progress.provider
    )


def trident_state_frame(spark: Any, topology: Topology) -> Any:
    """The readable maps of ``topology`` as a Spark DataFrame: ``state, key, value`` (JSON).

    .. versionadded:: 0.3.0
    """
    rows = [
        (m.name, json.dumps(key), json.dumps(value, default=repr))
        for m in read_trident_state(topology).maps
        for key, value in m.items
    ]
    return spark.createDataFrame(rows, FRAME_SCHEMA)
