"""Where stateful bolts' state is kept: Storm's state providers, as stores.

A checkpoint is a two-phase commit over every stateful task, at one superstep
boundary. Each task *stages* the keys it changed since its last checkpoint under the
checkpoint's transaction id (``stage``); once every task has staged, the driver writes
one *marker*, the last committed transaction id, for the whole topology
(``mark_committed``): that single write is the commit. The marker also records the
*sources* of the checkpoint: the keys of the spout messages whose trees it completes, so
a driver that dies before the spouts have acked them can skip them when they come again.
Each task then folds what it staged into its committed data (``commit``). Loading a
task's state rolls forward whatever was staged at or below the marker and ignores
anything above it, so a crash anywhere leaves either the old checkpoint or the new one,
never half of one.

Stores:

- ``memory``: nothing leaves the process (a task's committed state travels in its
  snapshot on Spark). For tests; lost with a driver or an executor.
- ``redis`` (:mod:`~sparkstorm.state.redis_store`): a hash per task; a commit is one
  MULTI/EXEC transaction.
- ``directory`` (:mod:`~sparkstorm.state.directory_store`): a local path or a URI opened
  with ``pyarrow.fs``; base and delta files per task, a ``COMMITTED-{txid}`` marker.

Whatever is stored is signed for its place (:mod:`~sparkstorm.state.signing`), the
markers included: whoever can write to a store cannot run code in a worker, move a
value, or make a run skip messages.
"""

from __future__ import annotations

import json
import pickle
import re
from collections.abc import Callable
from typing import Any, Protocol

from sparkstorm.config import provider_name
from sparkstorm.topology.shared_resources import shared_resource
from sparkstorm.urls import redacted


class _Deleted:
    """The type of :data:`DELETED`; it pickles as a reference, so it stays one object."""

    def __reduce__(self) -> str:
        return "DELETED"

    def __repr__(self) -> str:
        return "DELETED"


DELETED: Any = _Deleted()
"""Marks a key deleted in a set of changes (in snapshots and delta files too)."""

Changes = dict[Any, Any]
"""Key -> new value, or :data:`DELETED`."""

Sources = dict[str, list[Any]]
"""Spout component -> keys (``Spout.message_key``) of the messages a checkpoint committed."""


class Store(Protocol):
    """One topology's state in one store: per-task data and the topology's marker."""

    durable: bool
    """Whether committed state survives the process (else it travels in snapshots)."""

    def committed_txid(self) -> int:
        """The topology's last committed transaction id (-1 before the first)."""

    def mark_committed(self, txid: int, sources: Sources | None = None) -> None:
        """Commit ``txid`` for the whole topology, with its ``sources`` (one atomic write)."""

    def committed_sources(self) -> Sources:
        """The sources recorded with the last commit."""

    def load(self, task: str) -> tuple[int, dict[Any, Any]]:
        """A task's committed (txid, data), rolled forward to the marker."""

    def tasks(self) -> list[str]:
        """The tasks (``component:task``, ``...:windows``) with state in the store."""

    def read(self, task: str) -> tuple[int, dict[Any, Any]]:
        """What :meth:`load` gives, without writing anything (for readers outside a run)."""

    def stage(self, task: str, txid: int, changes: Changes) -> None:
        """Keep ``changes`` durably under ``txid``, invisible until the marker reaches it."""

    def commit(
        self, task: str, txid: int, changes: Changes, data: Callable[[], dict[Any, Any]]
    ) -> None:
        """Fold the changes staged under ``txid`` into the task's committed data.

        ``data`` gives the task's whole committed data after them, for a store that
        rewrites it now and then.
        """


def open_store(provider: str, config: dict[str, Any], topology: str) -> Store:
    """The process's store for ``topology`` (one per process, as a shared resource)."""
    from sparkstorm.state.directory_store import DirectoryStore
    from sparkstorm.state.redis_store import RedisStore

    name = provider_name(provider)
    key = ("sparkstorm.state", name, json.dumps(config, sort_keys=True), topology)
    factories: dict[str, Callable[[], Store]] = {
        "memory": lambda: MemoryStore(),
        "redis": lambda: RedisStore(config, topology),
        "directory": lambda: DirectoryStore(config, topology),
    }
    return shared_resource(key, factories[name])


_PASSWORD = re.compile(r"(\w+://[^:/@\s]*:)[^@\s]+@")
"""A URL's password in a text (an error message may quote the URL it failed on)."""


def unreachable(provider: str, config: dict[str, Any], error: BaseException) -> str:
    """One line: which store could not be opened, where (password masked), what to check."""
    where = config.get("url") or config.get("path") or ""
    shown = f" at {redacted(str(where))}" if where else ""
    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    masked = _PASSWORD.sub(r"\1***@", first)[:300]
    return (
        f"state provider {provider!r}{shown} cannot be used: {type(error).__name__}: "
        f"{masked}; check topology.state.provider.config (and that the store is up)"
    )


def unstorable(
    entries: dict[Any, Any], dumps: Callable[[Any], bytes]
) -> tuple[Any, Any, Exception] | None:
    """The first (key, item, error) of ``entries`` whose key or value ``dumps`` refuses."""
    for key, value in entries.items():
        for item in (key, value):
            if item is DELETED:
                continue
            try:
                dumps(item)
            except Exception as exc:
                return key, item, exc
    return None


def store_dumps(store: Store) -> Callable[[Any], bytes]:
    """How ``store`` serializes a key or a value."""
    codec = getattr(store, "codec", None)
    if codec is not None:
        return lambda value: codec.dumps(value, ("a check",))
    return lambda value: pickle.dumps(value, protocol=5)


def unstorable_message(where: str, serializer: str, found: tuple[Any, Any, Exception]) -> str:
    """One line: which task, key and value type cannot be stored, and what to do instead."""
    component, _, task = where.partition(":")
    key, item, error = found
    what = "key" if item is key else f"value of key {key!r}"
    return (
        f"bolt {component!r} (task {task}): state {what} is a {_type_name(item)}, which "
        f"the {serializer} serializer cannot store "
        f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}); "
        f"put plain data (numbers, strings, lists, dicts, dataclasses) in KeyValueState, "
        f"and keep clients, locks and files in attributes made in prepare()"
    )


def _type_name(item: Any) -> str:
    kind = type(item)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def serializer_of(store: Store) -> str:
    """The name of the serializer ``store`` writes with."""
    codec = getattr(store, "codec", None)
    return "json" if codec is not None and codec.json else "pickle"


def apply(data: dict[Any, Any], changes: Changes) -> None:
    """Apply ``changes`` to ``data`` in place."""
    for key, value in changes.items():
        if value is DELETED:
            data.pop(key, None)
        else:
            data[key] = value


class MemoryStore:
    """The marker only: each task's committed state stays in its own state object."""

    durable = False

    def __init__(self) -> None:
        self._txid = -1
        self._sources: Sources = {}

    def committed_txid(self) -> int:
        """The last committed checkpoint (-1 before the first)."""
        return self._txid

    def mark_committed(self, txid: int, sources: Sources | None = None) -> None:
        """Commit ``txid`` for the topology."""
        self._txid, self._sources = txid, sources or {}

    def committed_sources(self) -> Sources:
        """The sources recorded with the last commit."""
        return self._sources

    def load(self, task: str) -> tuple[int, dict[Any, Any]]:
        """The task's committed (txid, data), rolled forward to the marker."""
        return -1, {}

    def tasks(self) -> list[str]:
        """None: each task's state lives in its own process."""
        return []

    def read(self, task: str) -> tuple[int, dict[Any, Any]]:
        """Nothing: each task's state lives in its own process."""
        return -1, {}

    def stage(self, task: str, txid: int, changes: Changes) -> None:
        """Keep ``changes`` under ``txid`` until the marker reaches it."""

    def commit(
        self, task: str, txid: int, changes: Changes, data: Callable[[], dict[Any, Any]]
    ) -> None:
        """Fold what was staged under ``txid`` into the committed data."""


def probe(provider: str, config: dict[str, Any]) -> None:
    """Reach ``provider``'s store once, at once (a run's start: a store down is an error)."""
    if provider_name(provider) == "redis":
        from sparkstorm.state.redis_store import redis_client

        client = redis_client(config, 0.0)
        try:
            client.ping()
        finally:
            client.close()
