"""What every Trident state is, and what a map state is (Storm's ``State`` and ``MapState``).

A state is written only in a batch's commit phase, between ``begin_commit(txid)`` and
``commit(txid)``, one batch at a time and in txid order. A key of a map state is the list
of the group fields' values of one group; a value is whatever the aggregator keeps.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar

from typing_extensions import override

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


class MapState(State, Generic[T]):
    """A state of one value per key, updated a batch at a time.

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def multi_get(self, keys: list[Key]) -> list[T | None]:
        """The values of ``keys`` as of the current batch, None where a key has none."""

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


class ReplaceUpdater(ValueUpdater[T]):
    """An updater that ignores the stored value (a ``multi_put`` through ``multi_update``)."""

    def __init__(self, value: T) -> None:
        self.value = value

    @override
    def update(self, stored: T | None) -> T:
        return self.value
