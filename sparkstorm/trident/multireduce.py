"""``multi_reduce`` and ``join``: one operation over the tuples of several streams of a batch.

Storm's ``MultiReducer`` sees each batch partition's tuples of every stream, told which
stream each came from; a ``GroupedMultiReducer`` sees them group by group, the streams
partitioned by their group fields (the same values, in any stream, land in the same
partition). ``join`` is a grouped multi-reduce, as in Storm: the streams grouped by
their join fields, and for each group the cross product of the streams' tuples, a
stream joined ``JoinType.OUTER`` standing in with nulls where it has none. Joins are
within a batch: tuples of two batches never meet.
"""

from __future__ import annotations

import enum
import itertools
from abc import ABC, abstractmethod
from typing import Any, Generic, TypeVar

from typing_extensions import override

from sparkstorm.topology.fields import Fields
from sparkstorm.trident.nodes import FIELDS, BatchInfo, Node, Partitioning, Row, projector
from sparkstorm.trident.operations import Operation
from sparkstorm.trident.tuple import TridentCollector, TridentTuple, tuple_class

T = TypeVar("T")


class JoinType(enum.Enum):
    """How a stream takes part in a join (Storm's ``JoinType``).

    .. versionadded:: 0.4.0
    """

    INNER = "inner"
    """A group with no tuple of this stream joins nothing."""
    OUTER = "outer"
    """A group with no tuple of this stream joins a tuple of nulls in its place."""


class MultiReducer(Operation, ABC, Generic[T]):
    """Reduces the tuples of several streams of a batch partition (Storm's ``MultiReducer``).

    .. versionadded:: 0.4.0
    """

    @abstractmethod
    def init(self, collector: TridentCollector) -> T:
        """A new state, at a batch partition's start."""

    @abstractmethod
    def execute(
        self, state: T, stream_index: int, tup: TridentTuple, collector: TridentCollector
    ) -> None:
        """One tuple of stream ``stream_index`` (its input fields)."""

    @abstractmethod
    def complete(self, state: T, collector: TridentCollector) -> None:
        """Every tuple was seen: emit the results."""


class GroupedMultiReducer(Operation, ABC, Generic[T]):
    """Reduces each group's tuples of several streams (Storm's ``GroupedMultiReducer``).

    .. versionadded:: 0.4.0
    """

    @abstractmethod
    def init(self, collector: TridentCollector, group: TridentTuple) -> T:
        """A new state for ``group`` (the group fields' values)."""

    @abstractmethod
    def execute(
        self,
        state: T,
        stream_index: int,
        group: TridentTuple,
        tup: TridentTuple,
        collector: TridentCollector,
    ) -> None:
        """One tuple of stream ``stream_index`` in ``group`` (its input fields)."""

    @abstractmethod
    def complete(self, state: T, group: TridentTuple, collector: TridentCollector) -> None:
        """Every tuple of ``group`` was seen: emit its results."""


class MultiReduceNode(Node):
    """The node of ``multi_reduce``: one reducer over each stream's rows of a partition."""

    def __init__(
        self,
        parents: list[Node],
        in_fields: list[Fields],
        reducer: MultiReducer[Any] | GroupedMultiReducer[Any],
        out: Fields,
        groups: list[Fields] | None = None,
    ) -> None:
        super().__init__(out, parents, operations=(reducer,))
        self.reducer = reducer
        self.projects = [projector(p.fields, f) for p, f in zip(parents, in_fields, strict=True)]
        self.width = len(out)
        self.grouped = groups is not None
        if groups is not None:
            self.group_projects = [
                projector(p.fields, g) for p, g in zip(parents, groups, strict=True)
            ]
            self.group_class = tuple_class(groups[0])
            self.partitionings = [
                Partitioning(FIELDS, tuple(p.fields.index(n) for n in g))
                for p, g in zip(parents, groups, strict=True)
            ]

    @override
    def run(self, batch: BatchInfo, inputs: list[list[Row]], task: Any) -> list[Row]:
        collector = TridentCollector()
        if not self.grouped:
            reducer: Any = self.reducer
            state = reducer.init(collector)
            for index, (rows, project) in enumerate(zip(inputs, self.projects, strict=True)):
                for row in rows:
                    reducer.execute(state, index, project(row), collector)
            reducer.complete(state, collector)
        else:
            self._run_groups(inputs, collector)
        task.report_errors(collector.errors)
        for values in collector.emitted:
            if len(values) != self.width:
                msg = (
                    f"{self.label} emitted {len(values)} value(s), {values!r}, for "
                    f"{self.width} output field(s): emit one value per output field"
                )
                raise ValueError(msg)
        return collector.emitted

    def _run_groups(self, inputs: list[list[Row]], collector: TridentCollector) -> None:
        reducer: Any = self.reducer
        states: dict[tuple[Any, ...], tuple[TridentTuple, Any]] = {}
        for index, rows in enumerate(inputs):
            project, group_of = self.projects[index], self.group_projects[index]
            for row in rows:
                values = group_of(row)
                key = tuple(values)
                entry = states.get(key)
                if entry is None:
                    group = self.group_class(values)
                    entry = states[key] = (group, reducer.init(collector, group))
                reducer.execute(entry[1], index, entry[0], project(row), collector)
        for group, state in states.values():
            reducer.complete(state, group, collector)


class JoinerMultiReducer(GroupedMultiReducer[list[list[Any]]]):
    """``join``'s reducer: each group's cross product, nulls for an outer stream's none."""

    def __init__(self, types: list[JoinType], widths: list[int]) -> None:
        self.types, self.widths = types, widths

    @override
    def init(self, collector: TridentCollector, group: TridentTuple) -> list[list[Any]]:
        return [[] for _ in self.types]

    @override
    def execute(
        self,
        state: list[list[Any]],
        stream_index: int,
        group: TridentTuple,
        tup: TridentTuple,
        collector: TridentCollector,
    ) -> None:
        state[stream_index].append(tup)

    @override
    def complete(
        self, state: list[list[Any]], group: TridentTuple, collector: TridentCollector
    ) -> None:
        sides = [
            side if side or kind is JoinType.INNER else [[None] * width]
            for side, kind, width in zip(state, self.types, self.widths, strict=True)
        ]
        for combination in itertools.product(*sides):
            collector.emit([*group, *(value for side in combination for value in side)])
