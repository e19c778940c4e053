"""Where a Trident topology keeps its progress: the last committed txid, the spouts' metadata.

Storm keeps it in ZooKeeper, always. Here it is kept where it lives exactly as long as
the topology's states do, so that a restart, a lost worker or a rebalance goes on from
the last commit, counting nothing twice and losing nothing:

- ``topology.state.provider`` named: in that store (Redis, a directory, or ``memory``:
  the run's memory), under the topology's name (``NAME:trident``);
- not named: in the store of the states the topology persists into
  (``StateFactory.store()``), under the first state's name: a Redis map's progress in
  its Redis, a PostgreSQL map's in its database, a ``MemoryMapState``'s in the run's
  memory (as is that of a topology with no state), which outlives the workers but not
  the run;
- not named, and a state that cannot tell where it keeps its values (a user's own
  ``StateFactory``, as Storm's API writes them) with no durable state to keep it beside:
  with the driver, on its disk (``~/.sparkstorm/trident/NAME.json``), as Storm keeps it
  in ZooKeeper: a driver run again on that machine goes on from it. A cluster whose
  driver may start on another machine names ``topology.state.provider``;
- where that cannot be decided (states in two stores, a state that outlives the run
  with progress that does not), the topology is refused at submit, in one line naming
  ``topology.state.provider``, before anything is written.

A coordinator that starts again, in a new run or a new worker, goes on from the txid
after the last committed one: a durable state has seen every txid up to it, and a
transactional or opaque map would skip, or refuse, txids it has seen. The partitioned
spouts' metadata goes with it, in the same write (see ``trident/partitioned.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from sparkstorm.config import (
    TOPOLOGY_NAME,
    TOPOLOGY_STATE_PROVIDER,
    provider_config,
    provider_name,
)
from sparkstorm.control.run_memory import DURABLE, RunMemoryClient, durable_folder, run_memory
from sparkstorm.errors import InvalidTopologyError
from sparkstorm.state.stores import Sources, open_store
from sparkstorm.trident.state.base import MEMORY, StateStore

PROVIDER_HINT = (
    "set topology.state.provider to the store to keep it in (redis or directory, with "
    "topology.state.provider.config; memory for states that last no longer than the run)"
)


class Stored(Protocol):
    """What a topology writes into: a state factory, a windows store factory."""

    def store(self) -> StateStore | None:
        """Where it keeps what it is given; None: it cannot tell."""


class ProgressStore(Protocol):
    """What keeps a topology's progress: one marker, written whole."""

    def committed_txid(self) -> int:
        """The last committed txid (-1 before the first)."""

    def mark_committed(self, txid: int, sources: Sources | None = None) -> None:
        """``txid`` committed, with the spouts' metadata, in one write."""

    def committed_sources(self) -> Sources:
        """The metadata written with the last commit."""


def progress_store(
    conf: dict[str, Any], states: Sequence[tuple[str, Stored]]
) -> tuple[StateStore, str]:
    """Where the topology keeps its progress, and under which name; refused if undecidable.

    ``states`` are the topology's persisted states: (label, factory).
    """
    topology = conf.get(TOPOLOGY_NAME) or "topology"
    stores = [(label, factory, factory.store()) for label, factory in states]
    durable = [(label, store) for label, _, store in stores if store and store != MEMORY]
    named = conf.get(TOPOLOGY_STATE_PROVIDER)
    if named is not None:
        provider = provider_name(named)
        if provider == "memory" and durable:
            label, store = durable[0]
            msg = (
                f"Trident topology {topology!r} persists {label!r} into {store.shown}, which "
                f"outlives the run, but keeps its progress in memory "
                f"(topology.state.provider is 'memory'): a restart would count again what "
                f"was counted. Leave topology.state.provider unset (the progress is then "
                f"kept in the state's own store), or name a durable one"
            )
            raise InvalidTopologyError(msg)
        return StateStore(provider, provider_config(conf)), f"{topology}:trident"
    unknown = [label for label, _, store in stores if store is None]
    if unknown and not durable:  # a user's own states: kept with the driver, as in ZooKeeper
        return driver_store(), topology
    places = {s.shown: s for _, s in durable}  # one store: the same kind at one address
    if len(places) > 1:
        shown = " and ".join(s.shown for s in places.values())
        msg = (
            f"Trident topology {topology!r} persists into states in {shown}: which one "
            f"keeps its progress cannot be decided: {PROVIDER_HINT}"
        )
        raise InvalidTopologyError(msg)
    if not durable:
        return MEMORY, f"{topology}:trident"
    store = durable[0][1]
    return store, f"{store.name}:progress"


DRIVER = "driver"
"""The provider of progress the driver keeps on its disk (a durable run-memory space)."""


def driver_store() -> StateStore:
    """The driver's own durable home for progress, shown with its folder."""
    return StateStore(DRIVER, {"path": str(durable_folder())})


def shown_where(store: StateStore, name: str) -> str:
    """Where progress kept under ``name`` in ``store`` is, for people."""
    return f"{store.shown} ({name})"


def open_progress(store: StateStore, name: str, conf: dict[str, Any]) -> ProgressStore:
    """The progress store ``progress_store`` chose, opened."""
    if store.keeper is not None:  # a store of its own kind (Kafka): it opens its progress
        opened: ProgressStore = store.keeper.progress_store(conf.get(TOPOLOGY_NAME) or name)
        return opened
    if store.provider == "memory":
        return MemoryProgress(run_memory(conf), name)
    if store.provider == DRIVER:
        return MemoryProgress(run_memory(conf), name, durable=True)
    if store.provider == "postgres":
        from sparkstorm.trident.state.postgres import PostgresProgress

        return PostgresProgress(store.config["dsn"], name)
    config = dict(store.config)
    if store.name:  # a state's own store: beside the state, under its name
        config.setdefault("key_prefix", "sparkstorm:trident")
    return open_store(store.provider, config, name)


class MemoryProgress:
    """Progress in the run's memory: it outlives the workers; ``durable``, the run too."""

    def __init__(self, memory: RunMemoryClient, name: str, *, durable: bool = False) -> None:
        self.memory = memory
        self.space = f"{DURABLE}{name}" if durable else f"trident-progress:{name}"

    def committed_txid(self) -> int:
        """The last committed txid (-1 before the first)."""
        return int(self.memory.read(self.space).get("txid", -1))

    def mark_committed(self, txid: int, sources: Sources | None = None) -> None:
        """``txid`` committed, with the spouts' metadata."""
        self.memory.write(self.space, {"txid": txid, "sources": sources or {}})

    def committed_sources(self) -> Sources:
        """The metadata written with the last commit."""
        sources: Sources = self.memory.read(self.space).get("sources", {})
        return sources


def identity(spouts: dict[str, Any], states: Sequence[tuple[str, Stored]]) -> list[str]:
    """What makes a topology the one a progress belongs to: its spouts and states.

    The spouts by the names the user gave their streams and by kind, the states by kind
    (a state's own label is made from its place in the graph, which a new function
    before it moves); not its functions and bolts: a new version of the same topology
    (a function fixed) goes on where the old one stopped, another topology that happens
    to have the same name (another project's ``counts``) does not.
    """
    kinds = [f"spout {t}: {type(getattr(s, 'spout', s)).__qualname__}" for t, s in spouts.items()]
    return sorted(kinds + [f"state: {type(factory).__qualname__}" for _, factory in states])


class Progress:
    """The last committed txid of one Trident topology, and its spouts' metadata."""

    def __init__(
        self,
        store: ProgressStore,
        where: str,
        provider: str = "",
        mine: list[str] | None = None,
        name: str = "",
    ) -> None:
        self.store = store
        self.where = where
        """Where it is kept, for messages."""
        self.provider = provider
        """The kind of store it is kept in (``memory``: a run's, gone with the run)."""
        self.mine = mine
        """The topology's :func:`identity`, written with every commit (None: not checked)."""
        self.name = name

    @classmethod
    def open(
        cls,
        conf: dict[str, Any],
        states: Sequence[tuple[str, Stored]],
        mine: list[str] | None = None,
    ) -> Progress:
        """The topology's progress, where :func:`progress_store` says.

        With ``mine`` (the topology's :func:`identity`), a progress another topology
        wrote under the same name is refused, in one line saying what to do.
        """
        store, name = progress_store(conf, states)
        topology = conf.get(TOPOLOGY_NAME) or name
        opened = open_progress(store, name, conf)
        progress = cls(opened, shown_where(store, name), store.provider, mine, topology)
        if mine is not None:
            progress.check()
        return progress

    def check(self) -> None:
        """Refuse a progress written by another topology under this one's name."""
        kept = self.store.committed_sources().get("topology")
        if kept and self.mine is not None and sorted(kept) != self.mine:
            ours, theirs = set(self.mine), set(kept)
            msg = (
                f"Trident topology {self.name!r}: the progress at {self.where} is another "
                f"topology's under the same name (it has {'; '.join(sorted(theirs - ours))}; "
                f"this one has {'; '.join(sorted(ours - theirs)) or 'none of those'}): "
                f"give this one another name, or start it afresh with `sparkstorm state "
                f"{self.name} --reset` (the other's progress is then gone)"
            )
            raise InvalidTopologyError(msg)

    def committed(self) -> int:
        """The last committed txid (0 before the first)."""
        return max(0, self.store.committed_txid())

    def spouts(self) -> dict[str, Any]:
        """What the partitioned spouts kept with it (their metadata), by tx id."""
        kept = self.store.committed_sources().get("trident") or [{}]
        return dict(kept[0])

    def commit(
        self, txid: int, spouts: dict[str, Any] | None = None, resume_at: int | None = None
    ) -> None:
        """Batch ``txid`` committed in every state; ``spouts``' metadata, in one write.

        ``resume_at``: the txid a restart goes on from, past ``txid + 1`` when nothing
        is in flight and the empty batches after ``txid`` are not written each.
        """
        sources: dict[str, Any] = {"trident": [spouts or {}]}
        if self.mine is not None:
            sources["topology"] = self.mine
        if resume_at is not None:
            sources["resume"] = [resume_at]
        self.store.mark_committed(txid, sources)

    def resume_at(self) -> int:
        """The txid a restart goes on from at the earliest (0: after the last committed)."""
        kept = self.store.committed_sources().get("resume") or [0]
        return int(kept[0])
