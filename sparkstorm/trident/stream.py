"""``Stream``: a stream of batches of tuples, and the operations declared on it.

Declaring an operation checks its fields at once (``trident/declaring.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.declarers import check_reserved
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.windowing import Duration
from sparkstorm.trident.chained import ChainedAggregatorDeclarer
from sparkstorm.trident.columnar import BaseArrowFilter, BaseArrowFunction
from sparkstorm.trident.comparisons import Comparator, MaxWithComparator, MinWithComparator
from sparkstorm.trident.declaring import (
    aggregation_args,
    aggregator_kind,
    as_fields,
    check_fields,
    check_new_fields,
    partitioning_by,
)
from sparkstorm.trident.nodes import (
    BATCH_GLOBAL,
    BROADCAST,
    CUSTOM,
    FIELDS,
    GLOBAL,
    IDENTITY,
    SHUFFLE,
    AggregateNode,
    ArrowEachNode,
    ArrowFilterNode,
    EachNode,
    FilterNode,
    MapNode,
    MergeNode,
    Node,
    Partitioning,
    PersistNode,
    ProjectNode,
    SourceNode,
    StateQueryNode,
)
from sparkstorm.trident.operations import (
    BaseAggregator,
    BaseFilter,
    BaseFunction,
    BaseQueryFunction,
    BaseStateUpdater,
    Operation,
)
from sparkstorm.trident.state.base import StateSpec
from sparkstorm.trident.windowing import (
    InMemoryWindowsStoreFactory,
    SlidingCountWindow,
    SlidingDurationWindow,
    TumblingCountWindow,
    TumblingDurationWindow,
    WindowConfig,
    WindowNode,
    WindowsStoreFactory,
)

if TYPE_CHECKING:
    from sparkstorm.trident.grouped import GroupedStream, TridentState
    from sparkstorm.trident.state.base import StateFactory
    from sparkstorm.trident.topology import TridentTopology


class Stream:
    """A stream of batches of tuples; each method declares an operation on it.

    .. versionadded:: 0.3.0
    """

    def __init__(self, topology: TridentTopology, node: Node) -> None:
        self.topology = topology
        self.node = node

    def _then(self, node: Node, label: str) -> Stream:
        return Stream(self.topology, self.topology._add(node, label))

    def get_output_fields(self) -> Fields:
        """The stream's fields."""
        return self.node.fields

    # -- per tuple ---------------------------------------------------------------
    def each(self, *args: Any) -> Stream:
        """A function's tuples appended to each tuple's, or the tuples a filter keeps.

        ``each(in_fields, function, out_fields)``, ``each(function, out_fields)`` (the
        function sees every field), ``each(in_fields, filter)`` or ``each(filter)``.
        """
        if len(args) == 2 and isinstance(args[0], BaseFunction):
            args = (self.node.fields, *args)
        if len(args) == 3:
            in_fields = check_fields(self.node, as_fields(args[0]), "each")
            fn, out = args[1], check_new_fields(self.node, as_fields(args[2]), "each")
            if not isinstance(fn, BaseFunction):
                msg = f"each: {type(fn).__name__} is not a BaseFunction"
                raise TypeError(msg)
            if isinstance(fn, BaseArrowFunction):
                each: Node = ArrowEachNode(self.node, in_fields, fn, out)
            else:
                each = EachNode(self.node, in_fields, fn, out)
            return self._then(each, type(fn).__name__)
        if len(args) == 2:
            in_fields = check_fields(self.node, as_fields(args[0]), "each")
            return self._filter(in_fields, args[1])
        if len(args) == 1:
            return self._filter(self.node.fields, args[0])
        msg = (
            "each takes (in_fields, function, out_fields), (function, out_fields), "
            "(in_fields, filter) or (filter)"
        )
        raise TypeError(msg)

    def _filter(self, in_fields: Fields, keep: Any) -> Stream:
        if not isinstance(keep, BaseFilter):
            msg = f"{type(keep).__name__} is not a BaseFilter"
            raise TypeError(msg)
        if isinstance(keep, BaseArrowFilter):
            node: Node = ArrowFilterNode(self.node, in_fields, keep)
        else:
            node = FilterNode(self.node, in_fields, keep)
        return self._then(node, type(keep).__name__)

    def filter(self, keep: BaseFilter) -> Stream:
        """The tuples ``keep.is_keep`` is true of."""
        return self._filter(self.node.fields, keep)

    def map(self, fn: Any, out_fields: Fields | Sequence[str] | None = None) -> Stream:
        """One tuple for each: ``fn(tup)`` (or ``fn.execute(tup)``) gives its values."""
        out = None if out_fields is None else as_fields(out_fields)
        return self._then(MapNode(self.node, fn, out, "map"), "map")

    def flat_map(self, fn: Any, out_fields: Fields | Sequence[str] | None = None) -> Stream:
        """Any number of tuples for each: ``fn(tup)`` gives a list of value lists."""
        out = None if out_fields is None else as_fields(out_fields)
        return self._then(MapNode(self.node, fn, out, "flat_map"), "flat_map")

    def peek(self, fn: Any) -> Stream:
        """The same tuples, each shown to ``fn`` (or ``fn.accept``) on its way."""
        return self._then(MapNode(self.node, fn, None, "peek"), "peek")

    def project(self, fields: Fields | Sequence[str]) -> Stream:
        """Only ``fields``, in that order."""
        keep = check_fields(self.node, as_fields(fields), "project")
        return self._then(ProjectNode(self.node, keep), "project")

    # -- repartitions --------------------------------------------------------------
    def _repartition(self, partitioning: Partitioning, label: str) -> Stream:
        node = MergeNode(self.node.fields, [self.node]).partition(partitioning)
        return self._then(node, label)

    def partition_by(self, fields: Fields | Sequence[str]) -> Stream:
        """Tuples with equal ``fields`` go to the same partition."""
        by = check_fields(self.node, as_fields(fields), "partition_by")
        indexes = tuple(self.node.fields.index(n) for n in by)
        return self._repartition(Partitioning(FIELDS, indexes), "partition_by")

    def shuffle(self) -> Stream:
        """Tuples dealt evenly over the next partitions."""
        return self._repartition(Partitioning(SHUFFLE), "shuffle")

    def local_or_shuffle(self) -> Stream:
        """As :meth:`shuffle` (the tasks of a worker are not told apart here)."""
        return self._repartition(Partitioning(SHUFFLE), "local_or_shuffle")

    def broadcast(self) -> Stream:
        """Every tuple to every partition."""
        return self._repartition(Partitioning(BROADCAST), "broadcast")

    def global_(self) -> Stream:
        """Every tuple of every batch to one partition, the same one."""
        return self._repartition(Partitioning(GLOBAL), "global")

    def batch_global(self) -> Stream:
        """Every tuple of a batch to one partition, chosen per batch."""
        return self._repartition(Partitioning(BATCH_GLOBAL), "batch_global")

    def partition(self, grouping: Any) -> Stream:
        """Tuples dealt by ``grouping``, a Storm ``CustomStreamGrouping``.

        Its ``choose_tasks(task_id, values)`` gives the tasks each tuple goes to
        (``prepare`` first, if it has one).
        """
        if not callable(getattr(grouping, "choose_tasks", None)):
            msg = (
                f"partition: {type(grouping).__name__} is no grouping: give an object with "
                "choose_tasks(task_id, values) (Storm's CustomStreamGrouping)"
            )
            raise TypeError(msg)
        return self._repartition(Partitioning(CUSTOM, grouping=grouping), "partition")

    def identity_partition(self) -> Stream:
        """Each partition's tuples to the next partition of the same index.

        Storm's ``IdentityGrouping``: the two sides need the same ``parallelism_hint``.
        """
        return self._repartition(Partitioning(IDENTITY), "identity_partition")

    def group_by(self, fields: Fields | Sequence[str]) -> GroupedStream:
        """The stream in groups of equal ``fields``, for an aggregation or a state query."""
        from sparkstorm.trident.grouped import GroupedStream  # it wraps a Stream

        return GroupedStream(self, check_fields(self.node, as_fields(fields), "group_by"))

    # -- aggregations --------------------------------------------------------------
    def aggregate(self, *args: Any) -> Stream:
        """``aggregate([in_fields,] aggregator, out_fields)`` over each whole batch."""
        in_fields, agg, out = aggregation_args(args, "aggregate")
        return self._aggregate(Fields(), in_fields, agg, out, "aggregate")

    def _aggregate(
        self, group: Fields, in_fields: Fields | None, agg: Operation, out: Fields, what: str
    ) -> Stream:
        if in_fields is not None:
            check_fields(self.node, in_fields, what)
        kind, name = aggregator_kind(agg, what), type(agg).__name__
        node = self.node
        if kind == "combiner":
            node = self._then(
                AggregateNode(node, agg, in_fields, group, out, "partial", True), name
            ).node
            final = AggregateNode(node, agg, None, group, out, "final", False)
            return self._then(final.partition(partitioning_by(node, group, BATCH_GLOBAL)), name)
        full = AggregateNode(node, agg, in_fields, group, out, "full", False)
        return self._then(full.partition(partitioning_by(node, group, BATCH_GLOBAL)), name)

    def chained_agg(self) -> ChainedAggregatorDeclarer:
        """Several aggregations over each batch, joined into one tuple (``chain_end()``)."""
        return ChainedAggregatorDeclarer(self, Fields())

    def partition_aggregate(self, *args: Any) -> Stream:
        """``partition_aggregate([in_fields,] aggregator, out_fields)`` per batch partition."""
        in_fields, agg, out = aggregation_args(args, "partition_aggregate")
        return self._partition_aggregate(Fields(), in_fields, agg, out)

    def _partition_aggregate(
        self, group: Fields, in_fields: Fields | None, agg: Operation, out: Fields
    ) -> Stream:
        if in_fields is not None:
            check_fields(self.node, in_fields, "partition_aggregate")
        aggregator_kind(agg, "partition_aggregate")
        node = AggregateNode(self.node, agg, in_fields, group, out, "full", True)
        return self._then(node, type(agg).__name__)

    def min_by(self, field: str, comparator: Comparator | None = None) -> Stream:
        """Of each batch partition, the tuple whose ``field`` is least (by ``comparator``)."""
        return self._extreme(MinWithComparator(field, comparator), field, "min_by")

    def max_by(self, field: str, comparator: Comparator | None = None) -> Stream:
        """Of each batch partition, the tuple whose ``field`` is greatest."""
        return self._extreme(MaxWithComparator(field, comparator), field, "max_by")

    def min(self, comparator: Comparator) -> Stream:
        """Of each batch partition, the least tuple by ``comparator`` over whole tuples."""
        return self._extreme(MinWithComparator(comparator), None, "min")

    def max(self, comparator: Comparator) -> Stream:
        """Of each batch partition, the greatest tuple by ``comparator``."""
        return self._extreme(MaxWithComparator(comparator), None, "max")

    def _extreme(self, agg: BaseAggregator[Any], field: str | None, what: str) -> Stream:
        if field is not None:
            check_fields(self.node, Fields(field), what)
        fields = self.node.fields
        node = AggregateNode(self.node, agg, fields, Fields(), fields, "full", True)
        return self._then(node, what)

    # -- windows -------------------------------------------------------------------
    def window(self, config: WindowConfig, *args: Any) -> Stream:
        """``window(config, [windows_store_factory,] in_fields, aggregator, out_fields)``.

        The aggregator's tuples over each window that ends (see ``trident/windowing.py``),
        per partition; without a store factory, windows are kept in the run's memory.
        """
        if len(args) == 3:
            args = (InMemoryWindowsStoreFactory(), *args)
        if len(args) != 4:
            msg = (
                "window takes (config, [windows_store_factory,] in_fields, aggregator, "
                f"out_fields), got {len(args) + 1} arguments"
            )
            raise TypeError(msg)
        factory, in_fields, agg, out = args
        if not isinstance(config, WindowConfig):
            msg = f"window: {config!r} is no WindowConfig (TumblingCountWindow.of(10), ...)"
            raise TypeError(msg)
        if not isinstance(factory, WindowsStoreFactory):
            msg = f"window: {type(factory).__name__} is no WindowsStoreFactory"
            raise TypeError(msg)
        fields = check_fields(self.node, as_fields(in_fields), "window")
        aggregator_kind(agg, "window")
        node = WindowNode(self.node, config, factory, fields, agg, as_fields(out))
        return self._then(node, "window")

    def tumbling_window(
        self,
        length: int | Duration,
        factory: WindowsStoreFactory,
        in_fields: Fields | Sequence[str],
        aggregator: Operation,
        out_fields: Fields | Sequence[str],
    ) -> Stream:
        """Windows of ``length`` tuples (an int) or of a :class:`~sparkstorm.Duration`."""
        config: WindowConfig = (
            TumblingDurationWindow.of(length)
            if isinstance(length, Duration)
            else TumblingCountWindow.of(length)
        )
        return self.window(config, factory, in_fields, aggregator, out_fields)

    def sliding_window(
        self,
        length: int | Duration,
        slide: int | Duration,
        factory: WindowsStoreFactory,
        in_fields: Fields | Sequence[str],
        aggregator: Operation,
        out_fields: Fields | Sequence[str],
    ) -> Stream:
        """The last ``length`` tuples (ints) or time (Durations), every ``slide``."""
        config: WindowConfig
        if isinstance(length, Duration) and isinstance(slide, Duration):
            config = SlidingDurationWindow.of(length, slide)
        elif isinstance(length, int) and isinstance(slide, int):
            config = SlidingCountWindow.of(length, slide)
        else:
            msg = (
                f"sliding_window: length {length!r} and slide {slide!r}: give two ints "
                "(tuples) or two Durations"
            )
            raise TypeError(msg)
        return self.window(config, factory, in_fields, aggregator, out_fields)

    # -- state ---------------------------------------------------------------------
    def persistent_aggregate(self, factory: StateFactory | StateSpec, *args: Any) -> TridentState:
        """``persistent_aggregate(factory, [in_fields,] aggregator, out_fields)``: one value."""
        in_fields, agg, out = aggregation_args(args, "persistent_aggregate")
        return self._persist_aggregate(factory, Fields(), in_fields, agg, out)

    def _persist_aggregate(
        self,
        factory: StateFactory | StateSpec,
        group: Fields,
        in_fields: Fields | None,
        agg: Operation,
        out: Fields,
    ) -> TridentState:
        what = "persistent_aggregate"
        if in_fields is not None:
            check_fields(self.node, in_fields, what)
        kind = aggregator_kind(agg, what)
        if kind == "aggregator":
            msg = (
                f"{what}: {type(agg).__name__} is a BaseAggregator; a persistent aggregate "
                f"takes a CombinerAggregator or a ReducerAggregator (as in Storm)"
            )
            raise TypeError(msg)
        node = self.node
        if kind == "combiner":
            node = self._then(
                AggregateNode(node, agg, in_fields, group, out, "partial", True), type(agg).__name__
            ).node
        reads = node.fields if kind == "combiner" else (in_fields or node.fields)
        made, partitions = _unspec(factory)
        persist = PersistNode(node, made, kind, agg, group, reads, out).partition(
            partitioning_by(node, group, GLOBAL)
        )
        persist.parallelism = partitions
        return _state(self.topology, self.topology._add(persist, "persist"))

    def partition_persist(self, factory: StateFactory | StateSpec, *args: Any) -> TridentState:
        """Each partition's tuples written by a ``BaseStateUpdater`` in the commit phase.

        ``partition_persist(factory, [in_fields,] updater[, out_fields])`` (Storm's forms;
        without input fields the updater sees every field); ``factory`` may be a
        ``StateSpec``.
        """
        if args and isinstance(args[0], BaseStateUpdater):
            args = (self.node.fields, *args)
        if len(args) not in (2, 3) or not isinstance(args[1], BaseStateUpdater):
            msg = (
                "partition_persist takes (factory, [in_fields,] updater[, out_fields]), the "
                "updater a BaseStateUpdater"
            )
            raise TypeError(msg)
        fields = check_fields(self.node, as_fields(args[0]), "partition_persist")
        out = Fields() if len(args) == 2 or args[2] is None else as_fields(args[2])
        made, partitions = _unspec(factory)
        persist = PersistNode(self.node, made, "user", args[1], Fields(), fields, out)
        persist.parallelism = partitions
        return _state(self.topology, self.topology._add(persist, "partition_persist"))

    def state_query(
        self,
        state: TridentState,
        in_fields: Fields | Sequence[str],
        function: BaseQueryFunction[Any],
        out_fields: Fields | Sequence[str],
    ) -> Stream:
        """Each tuple's results from ``state``, read where the state's partitions live."""
        return self._state_query(state, in_fields, function, out_fields, None)

    def _state_query(
        self,
        state: TridentState,
        in_fields: Fields | Sequence[str],
        function: BaseQueryFunction[Any],
        out_fields: Fields | Sequence[str],
        by: Partitioning | None,
    ) -> Stream:
        fields = check_fields(self.node, as_fields(in_fields), "state_query")
        out = check_new_fields(self.node, as_fields(out_fields), "state_query")
        parent = self.node
        if by is None and isinstance(parent, MergeNode) and len(parent.parents) == 1:
            by, parent = parent.partitionings[0], parent.parents[0]  # the query's own routing
            self.node.folded = True
        query = StateQueryNode(parent, state.node, fields, function, out)  # type: ignore[arg-type]
        query.partition(by or Partitioning(SHUFFLE))
        return self._then(query, "state_query")

    # -- labels ----------------------------------------------------------------------
    def name(self, label: str) -> Stream:
        """Name the operation: its bolt takes the name, as the page and the logs show it.

        If no operation follows it, its tuples are also emitted on a core stream of that
        name, as plain tuples of its fields (capture it, or subscribe a bolt to it).
        """
        check_reserved("component", label)
        self.node.label = label
        self.node.named = True
        return self

    def parallelism_hint(self, n: int) -> Stream:
        """Run the operations since the last repartition in ``n`` partitions."""
        if not isinstance(n, int) or n < 1:
            msg = f"parallelism_hint needs a positive int, got {n!r}"
            raise InvalidTopologyError(msg)
        node: Node | None = self.node
        while node is not None and not isinstance(node, SourceNode):
            node.parallelism = n
            if any(p is not None for p in node.partitionings) or len(node.parents) != 1:
                break
            node = node.parents[0]
        return self

    def to_stream(self) -> Stream:
        """The stream itself (a grouped stream's is its stream)."""
        return self


def _state(topology: TridentTopology, node: Node) -> TridentState:
    from sparkstorm.trident.grouped import TridentState  # it gives a Stream of new values

    return TridentState(topology, node)


def _unspec(factory: StateFactory | StateSpec) -> tuple[StateFactory, int | None]:
    """A ``StateSpec``'s factory and partitions, or a factory's own (None: as hinted)."""
    if isinstance(factory, StateSpec):
        return factory.state_factory, factory.required_num_partitions
    return factory, None
