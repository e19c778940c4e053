"""``TridentTopology``: the streams of a Trident topology, declared, then ``build()``-ed.

``build()`` compiles the graph into core spouts and bolts (see ``trident/planner.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.fields import Fields
from sparkstorm.trident.declaring import as_fields, check_fields
from sparkstorm.trident.grouped import TridentState
from sparkstorm.trident.nodes import (
    FIELDS,
    TX,
    JoinNode,
    MergeNode,
    Node,
    Partitioning,
    SourceNode,
    StaticStateNode,
)
from sparkstorm.trident.stream import Stream

if TYPE_CHECKING:
    from sparkstorm.topology.builder import Topology
    from sparkstorm.trident.state.base import StateFactory


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
        fields = as_fields(batch_spout.get_output_fields())
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
        on1 = check_fields(stream1.node, as_fields(fields1), "join")
        on2 = check_fields(stream2.node, as_fields(fields2), "join")
        out = as_fields(out_fields)
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
