"""What every Trident state is, and what a map state is (Storm's ``State`` and ``MapState``).

A state is written only in a batch's commit phase, between ``begin_commit(txid)`` and
``commit(txid)``, one batch at a time and in txid order. A key of a map state is the list
of the group fields' values of one group; a value is whatever the aggregator keeps.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from typing_extensions import override

from sparkstorm.urls import redacted

T = TypeVar("T")

Key = Sequence[Any]
"""A map state's key: the group fields' values, in order."""


class State(ABC):
    """A store that a Trident topology writes in its commit phases.

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def begin_commit(self, txid: int | None) -> None:
        """Batch ``txid``'s updates follow (None: a DRPC stream's, which has no txid)."""

    @abstractmethod
    def commit(self, txid: int | None) -> None:
        """Batch ``txid``'s updates are all made: make them durable."""


@dataclass(frozen=True)
class StateStore:
    """Where a factory's states keep their values, as a store to keep progress in too.

    A Trident topology that does not name ``topology.state.provider`` keeps its progress
    (the last committed txid, the spouts' metadata) in the store of its states, under the
    state's ``name``, so that the two survive, or are lost, together.

    .. versionadded:: 0.4.0
    """

    provider: str
    """``memory`` (the run's memory, kept through lost workers), ``redis``, ``directory``
    or ``postgres``."""
    config: dict[str, Any] = field(default_factory=dict)
    """How to reach it: ``{"url": ...}`` for Redis, ``{"dsn": ...}`` for PostgreSQL."""
    name: str = ""
    """The state's name in the store."""
    keeper: Any = field(default=None, compare=False)
    """For a store sparkstorm does not know (Kafka): what opens the progress store there,
    with ``progress_store(topology)``; None for the stores above."""

    @property
    def shown(self) -> str:
        """The store for a message: its kind and address (a password masked)."""
        where = self.config.get("url") or self.config.get("dsn") or self.config.get("path")
        return f"{self.provider} at {redacted(str(where))}" if where else self.provider


MEMORY = StateStore("memory")
"""The run's memory: states that last as long as the run, through lost workers."""


class StateFactory(ABC):
    """Makes the state of one partition of a persisted stream, in the task that holds it.

    A factory is copied to the workers (pickled): open connections in ``make_state``.

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def make_state(
        self, conf: dict[str, Any], metrics: Any, partition_index: int, num_partitions: int
    ) -> State:
        """The state of partition ``partition_index`` of ``num_partitions``."""

    def state_type(self) -> str | None:
        """What its states do with a replayed txid (Storm's ``StateType``).

        ``transactional`` (skip it), ``opaque`` (apply it again on the value before it),
        ``non-transactional`` (apply it again); None (the default): not said, so no
        pairing with a spout is refused.

        .. versionadded:: 0.4.0
        """
        return None

    def store(self) -> StateStore | None:
        """Where its states keep their values; None (the default): sparkstorm cannot tell.

        A topology persisting only into factories that cannot tell keeps its progress
        with the driver, on its disk, unless ``topology.state.provider`` names a store
        (docs/trident.md, "Where the progress is kept").

        .. versionadded:: 0.4.0
        """
        return None

    def committed_items(self) -> Iterator[tuple[list[Any], Any]]:
        """Every key (its group's values) with its value as committed, read from outside.

        What ``sparkstorm state --from FILE`` shows. A store that only its tasks can
        reach says so.
        """
        msg = (
            f"{type(self).__name__} cannot be read from outside the run: it has no "
            "committed_items(); read it with a DRPC query while the topology runs"
        )
        raise NotImplementedError(msg)


class ValueUpdater(ABC, Generic[T]):
    """Turns a stored value into the new one (Storm's ``ValueUpdater``).

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def update(self, stored: T | None) -> T:
        """The new value, given the stored one (None where the key has none)."""


class IBackingMap(ABC, Generic[T]):
    """A plain key-value store under a map state: it does no txid bookkeeping of its own.

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def multi_get(self, keys: list[Key]) -> list[T | None]:
        """The stored values of ``keys``, None where a key has none."""

    @abstractmethod
    def multi_put(self, keys: list[Key], values: list[T]) -> None:
        """Store ``values[i]`` under ``keys[i]``."""


class ReadOnlyMapState(State, Generic[T]):
    """A state of one value per key that queries read (Storm's ``ReadOnlyMapState``).

    A static state (``new_static_state``) of a lookup table is one; ``MapGet`` reads it.

    .. versionadded:: 0.4.0
    """

    @abstractmethod
    def multi_get(self, keys: list[Key]) -> list[T | None]:
        """The values of ``keys`` as of the current batch, None where a key has none."""

    def begin_commit(self, txid: int | None) -> None:
        """Nothing to write."""

    def commit(self, txid: int | None) -> None:
        """Nothing to write."""


class MapState(ReadOnlyMapState[T]):
    """A state of one value per key, updated a batch at a time.

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def begin_commit(self, txid: int | None) -> None:
        """Batch ``txid``'s updates follow."""

    @abstractmethod
    def commit(self, txid: int | None) -> None:
        """Batch ``txid``'s updates are all made: make them durable."""

    @abstractmethod
    def multi_update(self, keys: list[Key], updaters: list[ValueUpdater[T]]) -> list[T]:
        """Apply ``updaters[i]`` to the value of ``keys[i]``; the new values."""

    @abstractmethod
    def multi_put(self, keys: list[Key], values: list[T]) -> None:
        """Replace the values of ``keys``."""


class Snapshottable(State, Generic[T]):
    """A state holding one value, for a global (ungrouped) persistent aggregate.

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def get(self) -> T | None:
        """The value as of the current batch."""

    @abstractmethod
    def update(self, updater: ValueUpdater[T]) -> T:
        """Apply ``updater`` to the value; the new value."""

    @abstractmethod
    def set(self, value: T) -> None:
        """Replace the value."""


@dataclass(frozen=True)
class StateSpec:
    """A state's factory, and how many partitions it needs (Storm's ``StateSpec``).

    ``persistent_aggregate`` and ``partition_persist`` take one where they take a
    factory; ``required_num_partitions`` sets the persist's parallelism.

    .. versionadded:: 0.4.0
    """

    state_factory: StateFactory
    required_num_partitions: int | None = None

    def __post_init__(self) -> None:
        n = self.required_num_partitions
        if n is not None and (not isinstance(n, int) or n < 1):
            msg = f"StateSpec: required_num_partitions {n!r}; give a positive int, or None"
            raise ValueError(msg)


class ReplaceUpdater(ValueUpdater[T]):
    """An updater that ignores the stored value (a ``multi_put`` through ``multi_update``)."""

    def __init__(self, value: T) -> None:
        self.value = value

    @override
    def update(self, stored: T | None) -> T:
        return self.value
