"""The operations a Trident stream applies, and the built-in ones (Storm's names).

Each operation is copied to the workers (pickled) and gets ``prepare(conf, context)``
once per partition before its first batch and ``cleanup()`` at the end, where it lives.
Raising :class:`~sparkstorm.FailedException` (or any other exception, which is also
reported as an error) fails the batch, which is replayed under the same txid.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from typing_extensions import override

from sparkstorm.trident.state.base import MapState, Snapshottable, State, ValueUpdater

if TYPE_CHECKING:
    import pyarrow as pa

    from sparkstorm.trident.tuple import TridentCollector, TridentTuple

T = TypeVar("T")
LOG = logging.getLogger("sparkstorm.trident")


class Operation:
    """What every operation has: ``prepare`` and ``cleanup``, both optional."""

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        """Called once per partition before its first batch; open clients here."""

    def cleanup(self) -> None:
        """Called when the topology stops, where the operation lives."""


class BaseFunction(Operation, ABC):
    """Emits zero or more tuples for each input; their fields are appended to the input's.

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def execute(self, tup: TridentTuple, collector: TridentCollector) -> None:
        """Emit, through ``collector``, the output fields' values for ``tup``."""


class BaseFilter(Operation, ABC):
    """Keeps the tuples for which ``is_keep`` is true.

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def is_keep(self, tup: TridentTuple) -> bool:
        """Whether ``tup`` goes on."""


class CombinerAggregator(Operation, ABC, Generic[T]):
    """An aggregation that combines partial results: pre-aggregated before any shuffle.

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def init(self, tup: TridentTuple) -> T:
        """The partial result of one tuple."""

    @abstractmethod
    def combine(self, a: T, b: T) -> T:
        """Two partial results as one (associative)."""

    @abstractmethod
    def zero(self) -> T:
        """The result of no tuples."""


class ReducerAggregator(Operation, ABC, Generic[T]):
    """An aggregation that folds the tuples of a group, one after the other.

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def init(self) -> T:
        """The result before the first tuple."""

    @abstractmethod
    def reduce(self, curr: T, tup: TridentTuple) -> T:
        """The result after ``tup``."""


class BaseAggregator(Operation, ABC, Generic[T]):
    """The most general aggregation: a state per batch (and group), any number of emits.

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def init(self, batch_id: Any, collector: TridentCollector) -> T:
        """The state at the start of a batch (of a group, for a grouped stream)."""

    @abstractmethod
    def aggregate(self, state: T, tup: TridentTuple, collector: TridentCollector) -> None:
        """Take one tuple into ``state`` (mutate it), emitting if you like."""

    @abstractmethod
    def complete(self, state: T, collector: TridentCollector) -> None:
        """The batch (or group) is over: emit the result."""


class BaseQueryFunction(Operation, ABC, Generic[T]):
    """Reads a state for a batch of tuples at once, then emits per tuple.

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def batch_retrieve(self, state: Any, args: list[TridentTuple]) -> list[Any]:
        """One result per tuple of ``args``, read from ``state`` together."""

    @abstractmethod
    def execute(self, tup: TridentTuple, result: Any, collector: TridentCollector) -> None:
        """Emit, for ``tup``, the output fields' values from its ``result``."""


class BaseStateUpdater(Operation, ABC):
    """Writes a partition's tuples of a batch into a state, in the commit phase.

    .. versionadded:: 0.3.0
    """

    @abstractmethod
    def update_state(
        self, state: State, tuples: list[TridentTuple], collector: TridentCollector
    ) -> None:
        """Write ``tuples`` into ``state``; what is emitted is ``new_values_stream``'s."""

    def update_batch(
        self, state: State, batch: pa.RecordBatch, collector: TridentCollector
    ) -> None:
        """Write a columnar stream's batch partition (a record batch of the input fields).

        Override it to write columns without a tuple per row; an updater that does not
        gets the rows as tuples in :meth:`update_state`.

        .. versionadded:: 0.5.0
        """
        raise NotImplementedError

    @classmethod
    def takes_batches(cls) -> bool:
        """Whether columns reach :meth:`update_batch` as they are.

        Only if it is overridden where :meth:`update_state` is, or below: a subclass that
        overrides ``update_state`` alone (to check or count what is written) must not
        be passed by its parent's ``update_batch``.
        """

        def owner(name: str) -> type:
            return next(k for k in cls.__mro__ if name in k.__dict__)

        batches = owner("update_batch")
        return batches is not BaseStateUpdater and issubclass(batches, owner("update_state"))


class CombinerValueUpdater(ValueUpdater[T]):
    """Combines a batch's partial result into the stored value (Storm's updater)."""

    def __init__(self, agg: CombinerAggregator[T], arg: T) -> None:
        self.agg = agg
        self.arg = arg

    @override
    def update(self, stored: T | None) -> T:
        return self.arg if stored is None else self.agg.combine(stored, self.arg)


# -- built-ins --------------------------------------------------------------------


class Count(CombinerAggregator[int]):
    """How many tuples.

    .. versionadded:: 0.3.0
    """

    @override
    def init(self, tup: TridentTuple) -> int:
        return 1

    @override
    def combine(self, a: int, b: int) -> int:
        return a + b

    @override
    def zero(self) -> int:
        return 0


class Sum(CombinerAggregator[Any]):
    """The sum of the input field's values.

    .. versionadded:: 0.3.0
    """

    @override
    def init(self, tup: TridentTuple) -> Any:
        return tup[0]

    @override
    def combine(self, a: Any, b: Any) -> Any:
        return a + b

    @override
    def zero(self) -> Any:
        return 0


class FilterNull(BaseFilter):
    """Drops tuples with a None among their input fields.

    .. versionadded:: 0.3.0
    """

    @override
    def is_keep(self, tup: TridentTuple) -> bool:
        return all(v is not None for v in tup)


class Equals(BaseFilter):
    """Keeps tuples whose input fields all have the same value.

    .. versionadded:: 0.3.0
    """

    @override
    def is_keep(self, tup: TridentTuple) -> bool:
        return all(v == tup[0] for v in tup)


class Negate(BaseFilter):
    """Keeps what another filter drops.

    .. versionadded:: 0.3.0
    """

    def __init__(self, delegate: BaseFilter) -> None:
        self.delegate = delegate

    @override
    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.delegate.prepare(conf, context)

    @override
    def cleanup(self) -> None:
        self.delegate.cleanup()

    @override
    def is_keep(self, tup: TridentTuple) -> bool:
        return not self.delegate.is_keep(tup)


class Debug(BaseFilter):
    """Logs every tuple (at INFO on ``sparkstorm.trident``) and keeps it.

    .. versionadded:: 0.3.0
    """

    def __init__(self, name: str = "DEBUG") -> None:
        self.name = name

    @override
    def is_keep(self, tup: TridentTuple) -> bool:
        LOG.info("%s: %s", self.name, list(tup))
        return True


class FirstN(BaseAggregator[list[Any]]):
    """The first ``n`` tuples of the batch, or the top ``n`` by ``sort_field``.

    .. versionadded:: 0.3.0
    """

    def __init__(self, n: int, sort_field: str | None = None, reverse: bool = True) -> None:
        self.n = n
        self.sort_field = sort_field
        self.reverse = reverse

    @override
    def init(self, batch_id: Any, collector: TridentCollector) -> list[Any]:
        return []

    @override
    def aggregate(self, state: list[Any], tup: TridentTuple, collector: TridentCollector) -> None:
        state.append(tup)

    @override
    def complete(self, state: list[Any], collector: TridentCollector) -> None:
        if self.sort_field is not None:
            field = self.sort_field
            state = sorted(state, key=lambda t: t.get(field), reverse=self.reverse)
        for tup in state[: self.n]:
            collector.emit(list(tup))


class MapGet(BaseQueryFunction[Any]):
    """Each tuple's value in a map state; its input fields are the key.

    .. versionadded:: 0.3.0
    """

    @override
    def batch_retrieve(self, state: MapState[Any], args: list[TridentTuple]) -> list[Any]:
        return state.multi_get([list(t) for t in args])

    @override
    def execute(self, tup: TridentTuple, result: Any, collector: TridentCollector) -> None:
        collector.emit([result])


class SnapshotGet(BaseQueryFunction[Any]):
    """The one value of a snapshottable state (a global persistent aggregate).

    .. versionadded:: 0.3.0
    """

    @override
    def batch_retrieve(self, state: Snapshottable[Any], args: list[TridentTuple]) -> list[Any]:
        value = state.get()
        return [value] * len(args)

    @override
    def execute(self, tup: TridentTuple, result: Any, collector: TridentCollector) -> None:
        collector.emit([result])


class TupleCollectionGet(BaseQueryFunction[Any]):
    """Every tuple a state holds (its ``get_tuples()``), emitted for each input tuple.

    .. versionadded:: 0.3.0
    """

    @override
    def batch_retrieve(self, state: Any, args: list[TridentTuple]) -> list[Any]:
        tuples = list(state.get_tuples())
        return [tuples] * len(args)

    @override
    def execute(self, tup: TridentTuple, result: Any, collector: TridentCollector) -> None:
        for values in result:
            collector.emit(values)
