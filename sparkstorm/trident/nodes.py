"""The nodes of a Trident topology's graph, and what each does to a batch.

Every node runs over a whole batch partition at a time: a list of rows (lists of values,
in the node's input fields' order) in, a list of rows out. Aggregations therefore see
every tuple of the partition together, and a combiner is pre-aggregated before a
repartition, so that one partial result per group crosses the network, not one tuple.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from typing_extensions import override

from sparkstorm.topology.fields import Fields
from sparkstorm.trident.columnar import (
    BaseArrowFilter,
    BaseArrowFunction,
    as_rows,
    concat,
    is_columns,
)
from sparkstorm.trident.comparisons import Max, Min
from sparkstorm.trident.operations import (
    BaseAggregator,
    BaseFilter,
    BaseFunction,
    BaseQueryFunction,
    BaseStateUpdater,
    CombinerAggregator,
    CombinerValueUpdater,
    Count,
    Operation,
    ReducerAggregator,
    Sum,
)
from sparkstorm.trident.state.base import (
    Key,
    MapState,
    Snapshottable,
    State,
    StateFactory,
    ValueUpdater,
)
from sparkstorm.trident.state.maps import SnapshottableMap
from sparkstorm.trident.tuple import TridentCollector, TridentTuple, tuple_class

Row = list[Any]

ROWS, COLUMNS, EITHER = "rows", "columns", "either"

GLOBAL_KEY = ["$GLOBAL$"]
"""Where a global aggregate keeps its one value in a map state that is not snapshottable."""

TX = "tx"
"""The batch source of every Trident spout: one txid sequence for them all."""

SHUFFLE, FIELDS, GLOBAL, BATCH_GLOBAL, BROADCAST, IDENTITY, CUSTOM = (
    "shuffle",
    "fields",
    "global",
    "batch_global",
    "broadcast",
    "identity",
    "custom",
)


@dataclass(frozen=True)
class Partitioning:
    """How a node's rows are dealt to the tasks of the next bolt."""

    kind: str
    indexes: tuple[int, ...] = ()
    grouping: Any = field(default=None, compare=False)
    """``custom``: the user's ``CustomStreamGrouping`` (``choose_tasks(task_id, values)``)."""


@dataclass
class BatchInfo:
    """Which batch a node runs over, and where."""

    source: Any
    txid: int
    attempt: int
    task_index: int
    num_tasks: int

    @property
    def batch_id(self) -> Any:
        """The id operations see: the txid of a spout batch, else the request's."""
        return self.txid

    def is_global_target(self) -> bool:
        """Whether this task is the one a batch-global step of this batch runs on."""
        return batch_global_index(self.txid, self.num_tasks) == self.task_index


def batch_global_index(txid: int, num_tasks: int) -> int:
    """The task (by index) that a batch-global repartition sends batch ``txid`` to."""
    return zlib.crc32(str(txid).encode()) % num_tasks


@dataclass(eq=False)
class Node:
    """One operation of the graph; its output ``fields`` are known when it is declared."""

    fields: Fields
    parents: list[Node] = field(default_factory=list)
    partitionings: list[Partitioning | None] = field(default_factory=list)
    """How rows reach this node from each parent; set where it starts a new bolt."""
    label: str = ""
    parallelism: int | None = None
    commit_phase: bool = False
    """Runs when its batch commits (a persist, and what follows ``new_values_stream``)."""
    sources: frozenset[Any] = frozenset()
    node_id: int = -1
    operations: tuple[Operation, ...] = ()
    named: bool = False
    """The user named it (``name(label)``): its bolt takes the name, and if nothing follows
    it, its tuples are emitted on a stream of that name (to capture, or to subscribe to)."""
    folded: bool = False
    """A repartition that a state query took over: nothing runs it unless it has children."""
    takes: ClassVar[str] = ROWS
    """What its batch partitions must be: ``rows`` (lists), ``columns`` (a record batch
    of its parents' fields: see ``trident/columnar.py``) or ``either``."""

    def __post_init__(self) -> None:
        if not self.partitionings:
            self.partitionings = [None] * len(self.parents)
        if not self.sources:
            self.sources = frozenset().union(*(p.sources for p in self.parents))
        if not self.commit_phase:
            self.commit_phase = any(p.commit_phase for p in self.parents)

    def partition(self, partitioning: Partitioning) -> Node:
        """The node, its rows reaching it through ``partitioning`` from every parent."""
        self.partitionings = [partitioning] * len(self.parents)
        return self

    def open(self, conf: dict[str, Any], context: Any, index: int, num: int) -> None:
        """Prepare the node's operations in the task that runs it."""
        for op in self.operations:
            op.prepare(conf, context)

    def close(self) -> None:
        """Clean up the node's operations."""
        for op in self.operations:
            op.cleanup()

    def run(self, batch: BatchInfo, inputs: list[list[Row]], task: Any) -> list[Row]:
        """The node's output rows for one batch partition (one input list per parent)."""
        return [row for rows in inputs for row in rows]


class SourceNode(Node):
    """A spout's stream or a DRPC function's: its rows come from the coordinator."""

    def __init__(self, fields: Fields, source: Any, key: str) -> None:
        super().__init__(fields, label=key, sources=frozenset([source]))
        self.key = key
        """The spout's tx id, or the DRPC function."""


class MergeNode(Node):
    """``merge(*streams)``, and a user's repartition: the rows as they come."""

    takes = EITHER

    @override
    def run(self, batch: BatchInfo, inputs: list[Any], task: Any) -> Any:
        return concat(inputs) if inputs else []


def projector(parent: Fields, selector: Fields) -> Callable[[Row], TridentTuple]:
    """Rows of ``parent``'s fields as tuples of ``selector``'s (without a copy if the same)."""
    cls = tuple_class(selector)
    if len(selector) == len(parent) and all(parent.index(n) == i for i, n in enumerate(selector)):
        return cls
    if len(selector) == 1:
        only = parent.index(selector[0])
        return lambda row: cls((row[only],))
    indexes = [parent.index(name) for name in selector]
    return lambda row: cls([row[i] for i in indexes])


class EachNode(Node):
    """``each(in_fields, function, out_fields)``: what the function emits, appended."""

    def __init__(self, parent: Node, in_fields: Fields, fn: BaseFunction, out: Fields) -> None:
        super().__init__(Fields([*parent.fields, *out]), [parent], operations=(fn,))
        self.project = projector(parent.fields, in_fields)
        self.fn = fn
        self.width = len(out)

    @override
    def run(self, batch: BatchInfo, inputs: list[list[Row]], task: Any) -> list[Row]:
        collector = TridentCollector()
        out: list[Row] = []
        execute, project, emitted = self.fn.execute, self.project, collector.emitted
        width = self.width
        for row in inputs[0]:
            execute(project(row), collector)
            if emitted:
                for values in emitted:
                    if len(values) != width:
                        _check_width(values, width, self)
                    out.append(row + values)
                emitted.clear()
        task.report_errors(collector.errors)
        return out


def _check_width(values: Row, width: int, node: Node) -> None:
    if len(values) != width:
        msg = (
            f"{node.label} emitted {len(values)} value(s), {values!r}, for "
            f"{width} output field(s): emit one value per output field"
        )
        raise ValueError(msg)


class FilterNode(Node):
    """``each(in_fields, filter)`` or ``filter(filter)``: the rows it keeps."""

    def __init__(self, parent: Node, in_fields: Fields, keep: BaseFilter) -> None:
        super().__init__(parent.fields, [parent], operations=(keep,))
        self.project = projector(parent.fields, in_fields)
        self.keep = keep

    @override
    def run(self, batch: BatchInfo, inputs: list[list[Row]], task: Any) -> list[Row]:
        is_keep, project = self.keep.is_keep, self.project
        return [row for row in inputs[0] if is_keep(project(row))]


def _call(fn: Any, name: str) -> Callable[..., Any]:
    """A user's function object's method ``name``, or the function itself."""
    method = getattr(fn, name, None)
    return method if callable(method) else fn  # type: ignore[no-any-return]


class MapNode(Node):
    """``map``, ``flat_map`` and ``peek``: a function of the whole tuple."""

    def __init__(self, parent: Node, fn: Any, out: Fields | None, kind: str) -> None:
        ops = (fn,) if isinstance(fn, Operation) else ()
        super().__init__(out if out is not None else parent.fields, [parent], operations=ops)
        self.call = _call(fn, "execute" if kind != "peek" else "accept")
        self.kind = kind
        self.parent_fields = parent.fields

    @override
    def run(self, batch: BatchInfo, inputs: list[list[Row]], task: Any) -> list[Row]:
        call, cls = self.call, tuple_class(self.parent_fields)
        if self.kind == "peek":
            for row in inputs[0]:
                call(cls(row))
            return inputs[0]
        if self.kind == "map":
            return [list(call(cls(row))) for row in inputs[0]]
        return [list(v) for row in inputs[0] for v in call(cls(row))]


class ProjectNode(Node):
    """``project(fields)``: only those fields, in that order."""

    takes = EITHER

    def __init__(self, parent: Node, keep: Fields) -> None:
        super().__init__(keep, [parent])
        self.indexes = [parent.fields.index(name) for name in keep]

    @override
    def run(self, batch: BatchInfo, inputs: list[Any], task: Any) -> Any:
        indexes, part = self.indexes, inputs[0]
        if is_columns(part):
            return pa.RecordBatch.from_arrays(
                [part.column(i) for i in indexes], names=self.fields.to_list()
            )
        return [[row[i] for i in indexes] for row in part]


class ArrowEachNode(Node):
    """``each`` with a :class:`BaseArrowFunction`: its columns appended to its parent rows'."""

    takes = COLUMNS

    def __init__(self, parent: Node, in_fields: Fields, fn: BaseArrowFunction, out: Fields) -> None:
        super().__init__(Fields([*parent.fields, *out]), [parent], operations=(fn,))
        self.select = [parent.fields.index(name) for name in in_fields]
        self.in_names, self.out_names = in_fields.to_list(), out.to_list()
        self.fn = fn

    @override
    def run(self, batch: BatchInfo, inputs: list[Any], task: Any) -> Any:
        part = inputs[0]
        out, parents = self.fn.execute_batch(_input_view(part, self.select, self.in_names))
        parents = _checked_output(self, out, parents, part.num_rows)
        kept = part.take(parents)
        return pa.RecordBatch.from_arrays(
            [*kept.columns, *out.columns], names=self.fields.to_list()
        )


def _input_view(part: pa.RecordBatch, select: list[int], names: list[str]) -> pa.RecordBatch:
    """The columns of ``part`` a columnar operation's input fields name, without a copy."""
    return pa.RecordBatch.from_arrays([part.column(i) for i in select], names=names)


def _checked_output(node: ArrowEachNode, out: Any, parents: Any, rows: int) -> Any:
    """``parents`` as an int array, once ``out`` is checked against the output fields."""
    what = f"{node.label or type(node.fn).__name__}.execute_batch"
    if not isinstance(out, pa.RecordBatch) or out.num_columns != len(node.out_names):
        got = out.schema.names if isinstance(out, pa.RecordBatch) else type(out).__name__
        msg = (
            f"{what} returned {got} for the output fields {node.out_names}: return "
            "(record batch of those fields, parent row of each output row)"
        )
        raise ValueError(msg)
    index = np.asarray(parents, np.int64)
    if index.shape != (out.num_rows,) or (len(index) and (index.min() < 0 or index.max() >= rows)):
        msg = (
            f"{what} returned {out.num_rows} rows with parents of shape {index.shape}: give "
            f"one input row (0 to {rows - 1}) per output row"
        )
        raise ValueError(msg)
    return index


class ArrowFilterNode(Node):
    """``each`` or ``filter`` with a :class:`BaseArrowFilter`: the rows its mask keeps."""

    takes = COLUMNS

    def __init__(self, parent: Node, in_fields: Fields, keep: BaseArrowFilter) -> None:
        super().__init__(parent.fields, [parent], operations=(keep,))
        self.select = [parent.fields.index(name) for name in in_fields]
        self.in_names = in_fields.to_list()
        self.keep = keep

    @override
    def run(self, batch: BatchInfo, inputs: list[Any], task: Any) -> Any:
        part = inputs[0]
        view = _input_view(part, self.select, self.in_names)
        mask = pa.array(np.asarray(self.keep.keep(view), bool))
        if len(mask) != part.num_rows:
            msg = (
                f"{self.label or type(self.keep).__name__}.keep returned {len(mask)} "
                f"entries for {part.num_rows} rows: give one bool a row"
            )
            raise ValueError(msg)
        return part.filter(mask)


class AggregateNode(Node):
    """One step of an aggregation over a batch partition, by group or over all of it.

    ``stage`` is ``partial`` (a combiner's init and combine before a repartition),
    ``final`` (combining partial results after it) or ``full`` (every tuple of the group
    here: a reducer's fold, or an aggregator's init, aggregate and complete). Where
    ``everywhere`` is false, an ungrouped result is emitted only by the batch's global
    task (so that an empty batch still yields ``zero()``, once).
    """

    def __init__(
        self,
        parent: Node,
        agg: Operation,
        in_fields: Fields | None,
        group: Fields,
        out: Fields,
        stage: str,
        everywhere: bool,
    ) -> None:
        super().__init__(Fields([*group, *out]), [parent], operations=(agg,))
        self.agg = agg
        self.stage = stage
        self.everywhere = everywhere
        self.group_indexes = [parent.fields.index(name) for name in group]
        self.width = len(out)
        self.in_fields = in_fields if in_fields is not None else parent.fields
        self.project = projector(parent.fields, self.in_fields)
        if stage == "final":
            self.project = projector(parent.fields, Fields(parent.fields[-1]))

    takes = EITHER

    @override
    def run(self, batch: BatchInfo, inputs: list[Any], task: Any) -> list[Row]:
        rows = inputs[0]
        if is_columns(rows):
            if not self.group_indexes and not self.everywhere and not batch.is_global_target():
                return []
            done = self._over_columns(rows)
            if done is not None:
                return done
            rows = as_rows(rows)
        if not self.group_indexes:
            if not self.everywhere and not batch.is_global_target():
                return []
            if self.stage == "partial" and not rows:
                return []
            return [list(values) for values in self._aggregate(batch, rows)]
        if isinstance(self.agg, CombinerAggregator):
            return self._combine_groups(rows)
        key = itemgetter(*self.group_indexes)
        groups: dict[Any, list[Row]] = {}
        for row in rows:
            k = key(row)
            members = groups.get(k)
            if members is None:
                groups[k] = [row]
            else:
                members.append(row)
        out: list[Row] = []
        single = len(self.group_indexes) == 1
        for k, members in groups.items():
            prefix = [k] if single else list(k)
            out.extend(prefix + values for values in self._aggregate(batch, members))
        return out

    def _over_columns(self, part: pa.RecordBatch) -> list[Row] | None:
        """``Count``, ``Sum``, ``min_by`` and ``max_by`` over a record batch, by pyarrow.

        None for any other aggregation: it runs over rows.
        """
        agg, kind = self.agg, type(self.agg)
        if self.stage == "final" or kind not in (Count, Sum, Min, Max):
            return None
        if kind in (Min, Max):
            if agg.comparator is not None or agg.field is None or self.group_indexes:  # type: ignore[attr-defined]
                return None
            if not part.num_rows:
                return []
            column = part.column(part.schema.get_field_index(agg.field))  # type: ignore[attr-defined]
            extreme = pc.min_max(column)["min" if kind is Min else "max"]
            if not extreme.is_valid:
                return None
            return as_rows(part.slice(pc.index(column, extreme).as_py(), 1))
        if not self.group_indexes:
            if self.stage == "partial" and not part.num_rows:
                return []
            if kind is Count:
                return [[part.num_rows]]
            column = part.column(part.schema.get_field_index(self.in_fields[0]))
            total = pc.sum(column)
            return [[total.as_py() if total.is_valid else 0]]
        names = [part.schema.names[i] for i in self.group_indexes]
        table = pa.Table.from_batches([part])
        if kind is Count:
            done = table.group_by(names, use_threads=False).aggregate([([], "count_all")])
        else:
            done = table.group_by(names, use_threads=False).aggregate([(self.in_fields[0], "sum")])
        return as_rows(done.combine_chunks().to_batches()[0]) if done.num_rows else []

    def _combine_groups(self, rows: list[Row]) -> list[Row]:
        """A combiner over each group, in one pass (the built-ins without a call a tuple)."""
        agg = self.agg
        assert isinstance(agg, CombinerAggregator)
        key = itemgetter(*self.group_indexes)
        if self.stage == "final":
            acc = combine_partials(agg, key, rows)
        elif type(agg) is Count:
            acc = dict(Counter(map(key, rows)))
        else:
            acc = {}
            init, combine, project = agg.init, agg.combine, self.project
            for row in rows:
                k, v = key(row), init(project(row))
                acc[k] = combine(acc[k], v) if k in acc else v
        if len(self.group_indexes) == 1:
            return [[k, v] for k, v in acc.items()]
        return [[*k, v] for k, v in acc.items()]

    def _aggregate(self, batch: BatchInfo, rows: list[Row]) -> Iterable[Row]:
        agg = self.agg
        if isinstance(agg, CombinerAggregator) and self.stage == "final":
            partials = [row[-1] for row in rows]
            acc = partials[0] if partials else agg.zero()
            for value in partials[1:]:
                acc = agg.combine(acc, value)
            return [[acc]]
        tuples = [self.project(row) for row in rows]
        return aggregate(agg, batch.batch_id, tuples, self.width, self)


def aggregate(
    agg: Operation, batch_id: Any, tuples: list[TridentTuple], width: int, node: Node
) -> list[Row]:
    """What an aggregator of any kind emits over ``tuples`` (``width`` values a row)."""
    if isinstance(agg, CombinerAggregator):
        if type(agg) is Count:
            return [[len(tuples)]]
        acc = agg.init(tuples[0]) if tuples else agg.zero()
        for tup in tuples[1:]:
            acc = agg.combine(acc, agg.init(tup))
        return [[acc]]
    if isinstance(agg, ReducerAggregator):
        state = agg.init()
        for tup in tuples:
            state = agg.reduce(state, tup)
        return [[state]]
    assert isinstance(agg, BaseAggregator)
    collector = TridentCollector()
    state = agg.init(batch_id, collector)
    for tup in tuples:
        agg.aggregate(state, tup, collector)
    agg.complete(state, collector)
    for values in collector.emitted:
        _check_width(values, width, node)
    return collector.emitted


def combine_partials(
    agg: CombinerAggregator[Any], key: Callable[[Row], Any], rows: list[Row]
) -> dict[Any, Any]:
    """Rows ``[*group, partial]`` combined into one partial result per group."""
    acc: dict[Any, Any] = {}
    if type(agg) in (Count, Sum):
        get = acc.get
        for row in rows:
            k = key(row)
            acc[k] = get(k, 0) + row[-1]
        return acc
    combine = agg.combine
    for row in rows:
        k = key(row)
        acc[k] = combine(acc[k], row[-1]) if k in acc else row[-1]
    return acc


class CommitNode(Node):
    """A node that runs in its batch's commit phase: a persist into a state, or a window.

    It runs on rows it kept since the batch was processed (``buffered``), or on
    commit-phase rows of the same bolt, once the coordinator's commit tuple for the batch
    arrives: strictly in txid order.
    """

    buffered: bool

    def write(self, txid: int, rows: list[Row], task: Any) -> list[Row]:
        """Apply one batch partition's rows in the commit of ``txid``; the rows it emits."""
        raise NotImplementedError


class PersistNode(CommitNode):
    """Writes its rows into a state in the batch's commit phase; emits the new values.

    ``kind`` says what the rows are and how they are written: ``combiner`` rows are
    ``[*group, partial]`` (one multi_update per batch partition), ``reducer`` rows are
    whole tuples folded per group, ``user`` rows go to a :class:`BaseStateUpdater`, a
    columnar batch partition as it is if the updater takes batches.
    """

    takes = EITHER

    def __init__(
        self,
        parent: Node,
        factory: StateFactory,
        kind: str,
        agg: Operation,
        group: Fields,
        in_fields: Fields,
        out: Fields,
    ) -> None:
        fields = Fields([*group, *out]) if kind != "user" else out
        super().__init__(fields, [parent], operations=(agg,))
        self.commit_phase = True
        self.buffered = not parent.commit_phase
        """Its input comes in the batch's processing phase and waits for the commit."""
        self.factory = factory
        self.kind = kind
        self.agg = agg
        self.group_indexes = [parent.fields.index(name) for name in group]
        self.project = projector(parent.fields, in_fields)
        takes_batches = kind == "user" and isinstance(agg, BaseStateUpdater) and agg.takes_batches()
        self.columns_in = [parent.fields.index(n) for n in in_fields] if takes_batches else None
        """The input columns an updater that takes batches gets; None: it takes rows."""
        self.names_in = in_fields.to_list()

    @override
    def open(self, conf: dict[str, Any], context: Any, index: int, num: int) -> None:
        super().open(conf, context, index, num)
        state = self.factory.make_state(conf, None, index, num)
        if self.kind != "user" and not self.group_indexes and not isinstance(state, Snapshottable):
            if not isinstance(state, MapState):
                raise TypeError(self._cannot(state, "a global aggregate", "Snapshottable"))
            state = SnapshottableMap(state, GLOBAL_KEY)  # its one value under one key
        elif self.kind != "user" and self.group_indexes and not isinstance(state, MapState):
            raise TypeError(self._cannot(state, "an aggregate by group", "MapState"))
        self.state = state

    def _cannot(self, state: State, what: str, needs: str) -> str:
        return (
            f"{self.label} persists {what} into {type(state).__name__} (made by "
            f"{type(self.factory).__name__}), which is no {needs}: persist it into a map "
            f"state, or make the factory's states {needs}s"
        )

    @override
    def write(self, txid: int | None, rows: Any, task: Any) -> list[Row]:
        """Apply one batch partition (rows, or a record batch) to the state; the new values."""
        if not len(rows):
            return []
        state = self.state
        state.begin_commit(txid)
        if is_columns(rows) and self.columns_in is not None:
            out = self._update_batch(state, rows, task)
        else:
            out = self._update(state, as_rows(rows), task)
        state.commit(txid)
        return out

    def _update_batch(self, state: State, batch: pa.RecordBatch, task: Any) -> list[Row]:
        """A columnar batch partition to an updater that takes batches, without rows."""
        assert isinstance(self.agg, BaseStateUpdater) and self.columns_in is not None
        collector = TridentCollector()
        columns = batch.select(self.columns_in).rename_columns(self.names_in)
        self.agg.update_batch(state, columns, collector)
        task.report_errors(collector.errors)
        return collector.emitted

    def _update(self, state: State, rows: list[Row], task: Any) -> list[Row]:
        agg, g = self.agg, self.group_indexes
        if self.kind == "user":
            assert isinstance(agg, BaseStateUpdater)
            collector = TridentCollector()
            agg.update_state(state, [self.project(row) for row in rows], collector)
            task.report_errors(collector.errors)
            return collector.emitted
        updaters: dict[Any, ValueUpdater[Any]]
        key = itemgetter(*g) if g else (lambda row: ())
        if isinstance(agg, CombinerAggregator):
            updaters = {
                k: CombinerValueUpdater(agg, v) for k, v in combine_partials(agg, key, rows).items()
            }
        else:
            assert isinstance(agg, ReducerAggregator)
            groups: dict[Any, list[TridentTuple]] = {}
            for row in rows:
                groups.setdefault(key(row), []).append(self.project(row))
            updaters = {k: _ReducerValueUpdater(agg, v) for k, v in groups.items()}
        if not g:
            assert isinstance(state, Snapshottable)  # made so in open
            return [[state.update(updaters[()])]]
        assert isinstance(state, MapState)
        keys: list[Key] = [[k] for k in updaters] if len(g) == 1 else [list(k) for k in updaters]
        values = state.multi_update(keys, list(updaters.values()))
        return [[*k, v] for k, v in zip(keys, values, strict=True)]


class _ReducerValueUpdater(ValueUpdater[Any]):
    """Folds a batch's tuples of one group into the stored value (Storm's updater)."""

    def __init__(self, agg: ReducerAggregator[Any], tuples: list[TridentTuple]) -> None:
        self.agg = agg
        self.tuples = tuples

    @override
    def update(self, stored: Any) -> Any:
        value = self.agg.init() if stored is None else stored
        for tup in self.tuples:
            value = self.agg.reduce(value, tup)
        return value


class StaticStateNode(Node):
    """``new_static_state(factory)``: a state made in each task that queries it."""

    def __init__(self, factory: StateFactory) -> None:
        super().__init__(Fields())
        self.factory = factory


class StateQueryNode(Node):
    """``state_query``: each tuple's result from the state, read for the batch at once."""

    def __init__(
        self,
        parent: Node,
        state: PersistNode | StaticStateNode,
        in_fields: Fields,
        fn: BaseQueryFunction[Any],
        out: Fields,
    ) -> None:
        super().__init__(Fields([*parent.fields, *out]), [parent], operations=(fn,))
        self.state_node = state
        self.fn = fn
        self.project = projector(parent.fields, in_fields)
        self.width = len(out)

    @override
    def open(self, conf: dict[str, Any], context: Any, index: int, num: int) -> None:
        super().open(conf, context, index, num)
        if isinstance(self.state_node, StaticStateNode):
            self.static = self.state_node.factory.make_state(conf, None, index, num)

    @override
    def run(self, batch: BatchInfo, inputs: list[list[Row]], task: Any) -> list[Row]:
        rows = inputs[0]
        if not rows:
            return []
        state = self.static if isinstance(self.state_node, StaticStateNode) else None
        if state is None:
            state = self.state_node.state  # type: ignore[union-attr]
        tuples = [self.project(row) for row in rows]
        results = self.fn.batch_retrieve(state, tuples)
        collector = TridentCollector()
        out: list[Row] = []
        for row, tup, result in zip(rows, tuples, results, strict=True):
            self.fn.execute(tup, result, collector)
            for values in collector.take():
                _check_width(values, self.width, self)
                out.append(row + values)
        task.report_errors(collector.errors)
        return out
