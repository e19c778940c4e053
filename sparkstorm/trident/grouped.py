"""``GroupedStream`` and ``TridentState``: a stream in groups, and a state it persists into."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.declarers import check_reserved
from sparkstorm.topology.fields import Fields
from sparkstorm.trident.chained import ChainedAggregatorDeclarer
from sparkstorm.trident.declaring import aggregation_args, partitioning_by
from sparkstorm.trident.nodes import FIELDS, Node, PersistNode
from sparkstorm.trident.operations import BaseQueryFunction
from sparkstorm.trident.stream import Stream

if TYPE_CHECKING:
    from sparkstorm.trident.state.base import StateFactory, StateSpec
    from sparkstorm.trident.topology import TridentTopology


class GroupedStream:
    """A stream in groups: aggregations and state queries go group by group.

    .. versionadded:: 0.3.0
    """

    def __init__(self, stream: Stream, group: Fields) -> None:
        self.stream = stream
        self.group = group

    def aggregate(self, *args: Any) -> Stream:
        """``aggregate([in_fields,] aggregator, out_fields)`` per group of each batch."""
        in_fields, agg, out = aggregation_args(args, "aggregate")
        return self.stream._aggregate(self.group, in_fields, agg, out, "aggregate")

    def chained_agg(self) -> ChainedAggregatorDeclarer:
        """Several aggregations per group, joined into one tuple per group (``chain_end()``)."""
        return ChainedAggregatorDeclarer(self.stream, self.group)

    def partition_aggregate(self, *args: Any) -> Stream:
        """``partition_aggregate([in_fields,] aggregator, out_fields)`` per group, per partition."""
        in_fields, agg, out = aggregation_args(args, "partition_aggregate")
        return self.stream._partition_aggregate(self.group, in_fields, agg, out)

    def persistent_aggregate(self, factory: StateFactory | StateSpec, *args: Any) -> TridentState:
        """``persistent_aggregate(factory, [in_fields,] aggregator, out_fields)`` per group."""
        in_fields, agg, out = aggregation_args(args, "persistent_aggregate")
        return self.stream._persist_aggregate(factory, self.group, in_fields, agg, out)

    def state_query(
        self,
        state: TridentState,
        in_fields: Fields | Sequence[str],
        function: BaseQueryFunction[Any],
        out_fields: Fields | Sequence[str],
    ) -> Stream:
        """As :meth:`Stream.state_query`, partitioned by the group fields first."""
        by = partitioning_by(self.stream.node, self.group, FIELDS)
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
