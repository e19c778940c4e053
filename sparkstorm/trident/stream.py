"""``TridentTopology``, ``Stream``, ``GroupedStream`` and ``TridentState``: Storm's batch API.

Declaring an operation checks its fields at once: a field an operation names that its
input lacks raises :class:`~sparkstorm.InvalidTopologyError` naming the field and
listing the fields there are. ``build()`` compiles the graph into core spouts and bolts
(see ``trident/planner.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.declarers import check_reserved
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.windowing import Duration
from sparkstorm.trident.nodes import (
    BATCH_GLOBAL,
    BROADCAST,
    FIELDS,
    GLOBAL,
    SHUFFLE,
    TX,
    AggregateNode,
    EachNode,
    FilterNode,
    JoinNode,
    MapNode,
    MergeNode,
    Node,
    Partitioning,
    PersistNode,
    ProjectNode,
    SourceNode,
    StateQueryNode,
    StaticStateNode,
)
from sparkstorm.trident.operations import (
    BaseAggregator,
    BaseFilter,
    BaseFunction,
    BaseQueryFunction,
    BaseStateUpdater,
    CombinerAggregator,
    Operation,
    ReducerAggregator,
)
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
    from sparkstorm.topology.builder import Topology
    from sparkstorm.trident.state.base import StateFactory


def _fields(value: Fields | Sequence[str] | str) -> Fields:
    if isinstance(value, Fields):
        return value
    return Fields(value) if isinstance(value, str) else Fields(list(value))


def _check(stream: Node, names: Fields, what: str) -> Fields:
    for name in names:
        if name not in stream.fields:
            msg = (
                f"{what}: field {name!r} is not in its input stream, whose fields are "
                f"{stream.fields.to_list()}"
            )
            raise InvalidTopologyError(msg, field=name)
    return names


def _check_new(stream: Node, names: Fields, what: str) -> Fields:
    for name in names:
        if name in stream.fields:
            msg = (
                f"{what}: output field {name!r} is already in its input stream "
                f"{stream.fields.to_list()}: name it differently, or project it away first"
            )
            raise InvalidTopologyError(msg, field=name)
    return names


def _by(parent: Node, group: Fields, ungrouped: str) -> Partitioning:
    """Rows of a group to one partition; ungrouped, to the one ``ungrouped`` says."""
    if group:
        return Partitioning(FIELDS, tuple(parent.fields.index(n) for n in group))
    return Partitioning(ungrouped)


def _agg_args(args: tuple[Any, ...], what: str) -> tuple[Fields | None, Operation, Fields]:
    """``([in_fields,] aggregator, out_fields)``."""
    if len(args) == 2:
        return None, args[0], _fields(args[1])
    if len(args) == 3:
        return _fields(args[0]), args[1], _fields(args[2])
    msg = f"{what} takes ([in_fields,] aggregator, out_fields), got {len(args)} arguments"
    raise TypeError(msg)


def _kind(agg: Operation, what: str) -> str:
    for cls, kind in (
        (CombinerAggregator, "combiner"),
        (ReducerAggregator, "reducer"),
        (BaseAggregator, "aggregator"),
    ):
        if isinstance(agg, cls):
            return kind
    msg = (
        f"{what}: {type(agg).__name__} is not an aggregator: subclass CombinerAggregator, "
        f"ReducerAggregator or BaseAggregator"
    )
    raise TypeError(msg)


class TridentTopology:
    """A Trident topology: streams of batches, declared, then ``build()``-ed into a Topology.

    .. versionadded:: 0.3.0
    """

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.spouts: dict[str, Any] = {}
        self.drpc: dict[str, Any] = {}

    def _add(self, node: Node, label: str) -> Node:
        node.node_id = len(self.nodes)
        node.label = node.label or f"{label}-{node.node_id}"
        self.nodes.append(node)
        return node

    def new_stream(self, tx_id: str, spout: Any) -> Stream:
        """A stream of ``spout``'s batches; ``tx_id`` names the spout's metadata."""
        if not isinstance(tx_id, str) or not tx_id:
            msg = f"new_stream needs a non-empty string tx_id, got {tx_id!r}"
            raise InvalidTopologyError(msg)
        if tx_id in self.spouts:
            msg = f"tx id {tx_id!r} is taken by another stream of this topology"
            raise InvalidTopologyError(msg)
        from sparkstorm.trident.sources import batch_source

        batch_spout = batch_source(spout)
        self.spouts[tx_id] = batch_spout
        fields = _fields(batch_spout.get_output_fields())
        return Stream(self, self._add(SourceNode(fields, TX, tx_id), tx_id))

    def new_drpc_stream(self, function: str, drpc: Any = None) -> Stream:
        """A stream of ``function``'s DRPC requests, one batch each, with the field ``args``."""
        if function in self.drpc:
            msg = f"DRPC function {function!r} has a stream already"
            raise InvalidTopologyError(msg)
        self.drpc[function] = drpc
        node = self._add(SourceNode(Fields("args"), ("drpc", function), function), function)
        return Stream(self, node)

    def new_static_state(self, factory: StateFactory) -> TridentState:
        """A state outside the batches (a lookup table), made in each task that queries it."""
        return TridentState(self, self._add(StaticStateNode(factory), "static-state"))

    def merge(self, *streams: Stream) -> Stream:
        """One stream of every tuple of ``streams``, with the first stream's field names."""
        if not streams:
            msg = "merge needs at least one stream"
            raise InvalidTopologyError(msg)
        widths = {len(s.node.fields) for s in streams}
        if len(widths) > 1:
            listed = [s.node.fields.to_list() for s in streams]
            msg = f"merge: the streams have different numbers of fields: {listed}"
            raise InvalidTopologyError(msg)
        node = MergeNode(streams[0].node.fields, [s.node for s in streams])
        return Stream(self, self._add(node, "merge"))

    def join(
        self,
        stream1: Stream,
        fields1: Fields | Sequence[str],
        stream2: Stream,
        fields2: Fields | Sequence[str],
        out_fields: Fields | Sequence[str],
    ) -> Stream:
        """Pairs of tuples of one batch whose join fields are equal (an inner join).

        ``out_fields`` names the join fields, then the first stream's other fields, then
        the second's.
        """
        on1 = _check(stream1.node, _fields(fields1), "join")
        on2 = _check(stream2.node, _fields(fields2), "join")
        out = _fields(out_fields)
        width = len(stream1.node.fields) + len(stream2.node.fields) - len(on2)
        if len(on1) != len(on2) or len(out) != width:
            msg = (
                f"join: {len(on1)} and {len(on2)} join fields, {len(out)} output fields "
                f"{out.to_list()}; expected as many join fields on each side and {width} "
                f"output fields (the join fields, then each stream's others)"
            )
            raise InvalidTopologyError(msg)
        node = JoinNode(stream1.node, on1, stream2.node, on2, out)
        node.partitionings = [
            Partitioning(FIELDS, tuple(stream1.node.fields.index(n) for n in on1)),
            Partitioning(FIELDS, tuple(stream2.node.fields.index(n) for n in on2)),
        ]
        return Stream(self, self._add(node, "join"))

    def build(self) -> Topology:
        """The core topology that runs this one: submit it like any other."""
        from sparkstorm.trident.planner import plan

        return plan(self)


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
            in_fields = _check(self.node, _fields(args[0]), "each")
            fn, out = args[1], _check_new(self.node, _fields(args[2]), "each")
            if not isinstance(fn, BaseFunction):
                msg = f"each: {type(fn).__name__} is not a BaseFunction"
                raise TypeError(msg)
            return self._then(EachNode(self.node, in_fields, fn, out), type(fn).__name__)
        if len(args) == 2:
            in_fields = _check(self.node, _fields(args[0]), "each")
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
        return self._then(FilterNode(self.node, in_fields, keep), type(keep).__name__)

    def filter(self, keep: BaseFilter) -> Stream:
        """The tuples ``keep.is_keep`` is true of."""
        return self._filter(self.node.fields, keep)

    def map(self, fn: Any, out_fields: Fields | Sequence[str] | None = None) -> Stream:
        """One tuple for each: ``fn(tup)`` (or ``fn.execute(tup)``) gives its values."""
        out = None if out_fields is None else _fields(out_fields)
        return self._then(MapNode(self.node, fn, out, "map"), "map")

    def flat_map(self, fn: Any, out_fields: Fields | Sequence[str] | None = None) -> Stream:
        """Any number of tuples for each: ``fn(tup)`` gives a list of value lists."""
        out = None if out_fields is None else _fields(out_fields)
        return self._then(MapNode(self.node, fn, out, "flat_map"), "flat_map")

    def peek(self, fn: Any) -> Stream:
        """The same tuples, each shown to ``fn`` (or ``fn.accept``) on its way."""
        return self._then(MapNode(self.node, fn, None, "peek"), "peek")

    def project(self, fields: Fields | Sequence[str]) -> Stream:
        """Only ``fields``, in that order."""
        keep = _check(self.node, _fields(fields), "project")
        return self._then(ProjectNode(self.node, keep), "project")

    # -- repartitions --------------------------------------------------------------
    def _repartition(self, partitioning: Partitioning, label: str) -> Stream:
        node = MergeNode(self.node.fields, [self.node]).partition(partitioning)
        return self._then(node, label)

    def partition_by(self, fields: Fields | Sequence[str]) -> Stream:
        """Tuples with equal ``fields`` go to the same partition."""
        by = _check(self.node, _fields(fields), "partition_by")
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

    def group_by(self, fields: Fields | Sequence[str]) -> GroupedStream:
        """The stream in groups of equal ``fields``, for an aggregation or a state query."""
        return GroupedStream(self, _check(self.node, _fields(fields), "group_by"))

    # -- aggregations --------------------------------------------------------------
    def aggregate(self, *args: Any) -> Stream:
        """``aggregate([in_fields,] aggregator, out_fields)`` over each whole batch."""
        in_fields, agg, out = _agg_args(args, "aggregate")
        return self._aggregate(Fields(), in_fields, agg, out, "aggregate")

    def _aggregate(
        self, group: Fields, in_fields: Fields | None, agg: Operation, out: Fields, what: str
    ) -> Stream:
        if in_fields is not None:
            _check(self.node, in_fields, what)
        kind, name = _kind(agg, what), type(agg).__name__
        node = self.node
        if kind == "combiner":
            node = self._then(
                AggregateNode(node, agg, in_fields, group, out, "partial", True), name
            ).node
            final = AggregateNode(node, agg, None, group, out, "final", False)
            return self._then(final.partition(_by(node, group, BATCH_GLOBAL)), name)
        full = AggregateNode(node, agg, in_fields, group, out, "full", False)
        return self._then(full.partition(_by(node, group, BATCH_GLOBAL)), name)

    def partition_aggregate(self, *args: Any) -> Stream:
        """``partition_aggregate([in_fields,] aggregator, out_fields)`` per batch partition."""
        in_fields, agg, out = _agg_args(args, "partition_aggregate")
        return self._partition_aggregate(Fields(), in_fields, agg, out)

    def _partition_aggregate(
        self, group: Fields, in_fields: Fields | None, agg: Operation, out: Fields
    ) -> Stream:
        if in_fields is not None:
            _check(self.node, in_fields, "partition_aggregate")
        _kind(agg, "partition_aggregate")
        node = AggregateNode(self.node, agg, in_fields, group, out, "full", True)
        return self._then(node, type(agg).__name__)

    def min_by(self, field: str) -> Stream:
        """The tuple of each batch with the least ``field``."""
        return self._extreme(field, maximum=False)

    def max_by(self, field: str) -> Stream:
        """The tuple of each batch with the greatest ``field``."""
        return self._extreme(field, maximum=True)

    def _extreme(self, field: str, maximum: bool) -> Stream:
        _check(self.node, Fields(field), "max_by" if maximum else "min_by")
        agg = _Extreme(self.node.fields.index(field), maximum)
        node = AggregateNode(self.node, agg, None, Fields(), self.node.fields, "full", False)
        return self._then(
            node.partition(Partitioning(BATCH_GLOBAL)), "max_by" if maximum else "min_by"
        )

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
        fields = _check(self.node, _fields(in_fields), "window")
        _kind(agg, "window")
        node = WindowNode(self.node, config, factory, fields, agg, _fields(out))
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
    def persistent_aggregate(self, factory: StateFactory, *args: Any) -> TridentState:
        """``persistent_aggregate(factory, [in_fields,] aggregator, out_fields)``: one value."""
        in_fields, agg, out = _agg_args(args, "persistent_aggregate")
        return self._persist_aggregate(factory, Fields(), in_fields, agg, out)

    def _persist_aggregate(
        self,
        factory: StateFactory,
        group: Fields,
        in_fields: Fields | None,
        agg: Operation,
        out: Fields,
    ) -> TridentState:
        what = "persistent_aggregate"
        if in_fields is not None:
            _check(self.node, in_fields, what)
        kind = _kind(agg, what)
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
        persist = PersistNode(node, factory, kind, agg, group, reads, out).partition(
            _by(node, group, GLOBAL)
        )
        return TridentState(self.topology, self.topology._add(persist, "persist"))

    def partition_persist(
        self,
        factory: StateFactory,
        in_fields: Fields | Sequence[str],
        updater: BaseStateUpdater,
        out_fields: Fields | Sequence[str] | None = None,
    ) -> TridentState:
        """Each partition's tuples written by ``updater`` in the commit phase."""
        fields = _check(self.node, _fields(in_fields), "partition_persist")
        out = Fields() if out_fields is None else _fields(out_fields)
        persist = PersistNode(self.node, factory, "user", updater, Fields(), fields, out)
        return TridentState(self.topology, self.topology._add(persist, "partition_persist"))

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
        fields = _check(self.node, _fields(in_fields), "state_query")
        out = _check_new(self.node, _fields(out_fields), "state_query")
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


class GroupedStream:
    """A stream in groups: aggregations and state queries go group by group.

    .. versionadded:: 0.3.0
    """

    def __init__(self, stream: Stream, group: Fields) -> None:
        self.stream = stream
        self.group = group

    def aggregate(self, *args: Any) -> Stream:
        """``aggregate([in_fields,] aggregator, out_fields)`` per group of each batch."""
        in_fields, agg, out = _agg_args(args, "aggregate")
        return self.stream._aggregate(self.group, in_fields, agg, out, "aggregate")

    def partition_aggregate(self, *args: Any) -> Stream:
        """``partition_aggregate([in_fields,] aggregator, out_fields)`` per group, per partition."""
        in_fields, agg, out = _agg_args(args, "partition_aggregate")
        return self.stream._partition_aggregate(self.group, in_fields, agg, out)

    def persistent_aggregate(self, factory: StateFactory, *args: Any) -> TridentState:
        """``persistent_aggregate(factory, [in_fields,] aggregator, out_fields)`` per group."""
        in_fields, agg, out = _agg_args(args, "persistent_aggregate")
        return self.stream._persist_aggregate(factory, self.group, in_fields, agg, out)

    def state_query(
        self,
        state: TridentState,
        in_fields: Fields | Sequence[str],
        function: BaseQueryFunction[Any],
        out_fields: Fields | Sequence[str],
    ) -> Stream:
        """As :meth:`Stream.state_query`, partitioned by the group fields first."""
        by = _by(self.stream.node, self.group, FIELDS)
        return self.stream._state_query(state, in_fields, function, out_fields, by)

    def each(self, *args: Any) -> GroupedStream:
        """As :meth:`Stream.each`, keeping the groups."""
        return GroupedStream(self.stream.each(*args), self.group)

    def name(self, label: str) -> GroupedStream:
        """As :meth:`Stream.name`."""
        self.stream.name(label)
        return self

    def to_stream(self) -> Stream:
        """The stream without its groups."""
        return self.stream

    def get_output_fields(self) -> Fields:
        """The stream's fields."""
        return self.stream.get_output_fields()


class TridentState:
    """A state a stream persists into (or a static one): query it, or follow its new values.

    .. versionadded:: 0.3.0
    """

    def __init__(self, topology: TridentTopology, node: Node) -> None:
        self.topology = topology
        self.node = node

    def new_values_stream(self) -> Stream:
        """The values the state took in each batch's commit (a stream in the commit phase)."""
        if not isinstance(self.node, PersistNode):
            msg = "a static state has no new values"
            raise InvalidTopologyError(msg)
        return Stream(self.topology, self.node)

    def parallelism_hint(self, n: int) -> TridentState:
        """Keep the state in ``n`` partitions."""
        if not isinstance(n, int) or n < 1:
            msg = f"parallelism_hint needs a positive int, got {n!r}"
            raise InvalidTopologyError(msg)
        self.node.parallelism = n
        return self

    def name(self, label: str) -> TridentState:
        """Name the state's operation (and its bolt)."""
        check_reserved("component", label)
        self.node.label = label
        self.node.named = True
        return self


class _Extreme(BaseAggregator[list[Any]]):
    """The tuple with the least or greatest value of one field (``min_by``/``max_by``)."""

    def __init__(self, index: int, maximum: bool) -> None:
        self.index = index
        self.maximum = maximum

    def init(self, batch_id: Any, collector: Any) -> list[Any]:
        """No tuple yet."""
        return []

    def aggregate(self, state: list[Any], tup: Any, collector: Any) -> None:
        """Keep ``tup`` if it beats the one kept."""
        value = tup[self.index]
        if not state or (
            (value > state[0][self.index]) == self.maximum and value != state[0][self.index]
        ):
            state[:] = [list(tup)]

    def complete(self, state: list[Any], collector: Any) -> None:
        """Emit the one kept, if any."""
        for values in state:
            collector.emit(values)
