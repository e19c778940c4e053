"""``KeyValueState``: a stateful bolt task's state (Storm's ``KeyValueState``).

The task's whole committed state is kept in memory, so ``get`` and ``put`` cost a
dictionary lookup; beside it are the changes since the last checkpoint. A checkpoint
stages those changes (:meth:`prepare`), then folds them in (:meth:`commit`); a rollback
drops what was not committed. The store writes only the changes, so a checkpoint costs
what changed, not the state's size (see :mod:`sparkstorm.state.stores`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from sparkstorm.errors import ComponentStateError, StateStoreError
from sparkstorm.state.stores import (
    DELETED,
    Changes,
    Store,
    apply,
    open_store,
    serializer_of,
    store_dumps,
    unreachable,
    unstorable,
    unstorable_message,
)

_MISSING: Any = object()


class StateValueError(ComponentStateError):
    """A key or value put in a ``KeyValueState`` that its store cannot serialize.

    ``roots`` are the trees whose processing put such entries there (the engine fails
    them as their own failure, and rolls the rest back without counting an attempt).

    .. versionadded:: 0.2.0
    """

    def __init__(self, message: str, roots: set[int]) -> None:
        super().__init__(message)
        self.roots = roots


class KeyValueState:
    """Key -> value state of one stateful bolt task, committed at checkpoints.

    Keys and values are any picklable objects (with the ``json`` serializer of a store,
    any JSON values). Iterating yields keys, as a ``dict`` does; :meth:`items` yields
    ``(key, value)`` pairs, as Storm's iterator yields entries.

    .. versionadded:: 0.2.0
    """

    def __init__(self, provider: str, config: dict[str, Any], topology: str, task: str) -> None:
        self._where = (provider, config, topology, task)
        self._store: Store | None = None
        self._data: dict[Any, Any] | None
        self.txid, self._data = self.store.load(task)
        self._changes: Changes = {}
        self._staged: dict[int, Changes] = {}
        self.writer: dict[int, int] | None = None
        """The trees of the input being executed (its roots), set by the engine."""
        self._writers: dict[Any, dict[int, int]] = {}

    @property
    def _committed(self) -> dict[Any, Any]:
        """The committed data; after a move between processes, read from the store once."""
        if self._data is None:
            txid, self._data = self.store.load(self._where[3])
            for folded in [t for t in self._staged if self.txid < t <= txid]:
                del self._staged[folded]  # committed by the marker, rolled forward by load
                self.txid = folded
            if txid != self.txid:
                msg = (
                    f"state of {self._where[3]} in the store is at checkpoint {txid}, but "
                    f"the task's snapshot is at {self.txid}"
                )
                raise RuntimeError(msg)
        return self._data

    @property
    def store(self) -> Store:
        """The store of the state, opened in this process on first use."""
        if self._store is None:
            provider, config, topology, _ = self._where
            self._store = open_store(provider, config, topology)
        return self._store

    # -- Storm's KeyValueState ------------------------------------------------------------
    def put(self, key: Any, value: Any) -> None:
        """Set ``key`` to ``value``."""
        self._changes[key] = value
        if self.writer:
            self._writers[key] = self.writer

    def get(self, key: Any, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when it has none."""
        value = self._changes.get(key, _MISSING)
        if value is _MISSING:
            for staged in reversed(self._staged.values()):
                value = staged.get(key, _MISSING)
                if value is not _MISSING:
                    break
            else:
                return self._committed.get(key, default)
        return default if value is DELETED else value

    def get_many(self, keys: Iterable[Any], default: Any = None) -> list[Any]:
        """The values of ``keys``, in order (``default`` for a key without one).

        A batch's keys in one call (a pyarrow or numpy array, or any iterable): what an
        :class:`~sparkstorm.arrow.StatefulArrowBolt` reads per record batch.

        .. versionadded:: 0.5.0
        """
        keys = _as_list(keys)
        if self._changes or self._staged:
            get = self.get
            return [get(key, default) for key in keys]
        committed = self._committed.get
        return [committed(key, default) for key in keys]

    def put_many(self, keys: Iterable[Any], values: Iterable[Any]) -> None:
        """Set each of ``keys`` to the value at the same place in ``values``.

        .. versionadded:: 0.5.0
        """
        keys, values = _as_list(keys), _as_list(values)
        if len(keys) != len(values):
            msg = f"put_many got {len(keys)} keys and {len(values)} values: give one value a key"
            raise ValueError(msg)
        self._changes.update(zip(keys, values, strict=True))
        if self.writer:
            self._writers.update(dict.fromkeys(keys, self.writer))

    def delete(self, key: Any) -> Any:
        """Remove ``key``; return the value it had (None if none)."""
        old = self.get(key)
        self._changes[key] = DELETED
        return old

    def __contains__(self, key: Any) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def items(self) -> Iterator[tuple[Any, Any]]:
        """Every (key, value), the uncommitted changes included."""
        merged = dict(self._committed)
        for staged in self._staged.values():
            apply(merged, staged)
        apply(merged, self._changes)
        return iter(merged.items())

    def __iter__(self) -> Iterator[Any]:
        return (key for key, _ in self.items())

    def __len__(self) -> int:
        return sum(1 for _ in self.items())

    def __repr__(self) -> str:
        return f"KeyValueState({self._where[3]}, txid={self.txid}, changes={len(self._changes)})"

    # -- checkpoints (the engine calls these) ------------------------------------------
    def prepare(self, txid: int) -> int:
        """Stage the changes since the last checkpoint under ``txid``; return how many."""
        changes, self._changes = self._changes, {}
        writers, self._writers = self._writers, {}
        try:
            self.store.stage(self._where[3], txid, changes)
        except Exception as exc:
            dumps = store_dumps(self.store)
            found = unstorable(changes, dumps)
            if found is None:  # the store, not the data: one line naming it
                provider, config, _, _ = self._where
                raise StateStoreError(unreachable(provider, config, exc)) from exc
            message = unstorable_message(self._where[3], serializer_of(self.store), found)
            roots = {
                root
                for key, value in changes.items()
                if unstorable({key: value}, dumps) is not None
                for root in writers.get(key, {})
            }
            raise StateValueError(message, roots) from exc
        self._staged[txid] = changes
        return len(changes)

    def commit(self, txid: int) -> None:
        """Fold in what was staged up to ``txid`` (the driver has written the marker)."""
        committed = self._committed  # after a move: read the store first, it may be ahead
        for staged in sorted(t for t in self._staged if t <= txid):
            changes = self._staged.pop(staged)
            apply(committed, changes)
            self.store.commit(self._where[3], staged, changes, lambda: committed)
            self.txid = staged

    def rollback(self) -> None:
        """Drop every change not committed: back to the last checkpoint."""
        self._changes.clear()
        self._staged.clear()
        self._writers.clear()

    # -- snapshots (Spark moves a task between worker processes) ------------------------
    def take_unstorable(self, dumps: Callable[[Any], bytes]) -> StateValueError | None:
        """Take the changes ``dumps`` refuses out of the state; the error naming them.

        For a snapshot that must travel (the Spark engine's superstep mode): the rollback
        that follows drops every uncommitted change anyway, and fails the trees that
        wrote these as their own failure.
        """
        bad = {k: v for k, v in self._changes.items() if unstorable({k: v}, dumps) is not None}
        if not bad:
            return None
        found = unstorable(bad, dumps)
        assert found is not None
        roots = {root for key in bad for root in self._writers.get(key, {})}
        for key in bad:
            del self._changes[key]
            self._writers.pop(key, None)
        return StateValueError(unstorable_message(self._where[3], "pickle", found), roots)

    def unpicklable(self, dumps: Callable[[Any], bytes]) -> str | None:
        """What in this state ``dumps`` refuses (for a snapshot), said in one line; or None."""
        entries: dict[Any, Any] = {}
        for part in (self._data or {}, *self._staged.values(), self._changes):
            entries.update(part)
        found = unstorable(entries, dumps)
        return None if found is None else unstorable_message(self._where[3], "pickle", found)

    def __getstate__(self) -> dict[str, Any]:
        state = {
            "where": self._where,
            "txid": self.txid,
            "changes": self._changes,
            "staged": self._staged,
            "writers": self._writers,
        }
        if not self.store.durable:  # the committed state exists nowhere else
            state["committed"] = self._committed
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._where, self._store = state["where"], None
        self._changes, self._staged = state["changes"], state["staged"]
        self._writers, self.writer = state.get("writers", {}), None
        self.txid = state["txid"]
        self._data = state.get("committed")  # None: read from the store when first needed

    def adopt(self, older: KeyValueState) -> None:
        """Take ``older``'s committed data when it is at this state's txid (no reload)."""
        if self._data is None and older.txid == self.txid and older._where == self._where:
            self._data = older._data


def _as_list(values: Iterable[Any]) -> list[Any]:
    """``values`` as a list of Python objects (an Arrow or numpy array converted)."""
    if hasattr(values, "to_pylist"):
        return values.to_pylist()  # type: ignore[no-any-return]
    if hasattr(values, "tolist"):
        return values.tolist()  # type: ignore[no-any-return]
    return list(values)
