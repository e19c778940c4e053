"""``TridentTopology``: the streams of a Trident topology, declared, then ``build()``-ed.

``build()`` compiles the graph into core spouts and bolts (see ``trident/planner.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.fields import Fields
from sparkstorm.trident.declaring import as_fields, check_fields
from sparkstorm.trident.grouped import GroupedStream, TridentState
from sparkstorm.trident.multireduce import (
    GroupedMultiReducer,
    JoinerMultiReducer,
    JoinType,
    MultiReduceNode,
    MultiReducer,
)
from sparkstorm.trident.nodes import (
    TX,
    MergeNode,
    Node,
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

        batch_spout = batch_source(spout, tx_id)
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

    def join(self, *args: Any, join_type: JoinType | list[JoinType] = JoinType.INNER) -> Stream:
        """The tuples of one batch whose join fields are equal, joined (Storm's ``join``).

        ``join(stream1, fields1, stream2, fields2, out_fields)``, or for any number of
        streams ``join([stream1, ...], [fields1, ...], out_fields)``; ``join_type`` is a
        :class:`JoinType` for every stream, or a list of one per stream (Storm's
        *mixed*). ``out_fields`` names the join fields, then each stream's other fields,
        in order. A stream joined ``OUTER`` gives nulls to a group it has no tuple of.
        """
        if len(args) == 5:
            streams, on, out_fields = [args[0], args[2]], [args[1], args[3]], args[4]
        elif len(args) == 3 and isinstance(args[0], list | tuple):
            streams, on, out_fields = list(args[0]), list(args[1]), args[2]
        else:
            msg = (
                "join takes (stream1, fields1, stream2, fields2, out_fields) or "
                "([streams], [join fields], out_fields)"
            )
            raise TypeError(msg)
        types = join_type if isinstance(join_type, list) else [join_type] * len(streams)
        if len(on) != len(streams) or len(types) != len(streams) or len(streams) < 2:
            msg = (
                f"join: {len(streams)} streams, {len(on)} lists of join fields and "
                f"{len(types)} join types: give two streams or more, a list of fields and "
                f"a join type for each"
            )
            raise InvalidTopologyError(msg)
        keys = [
            check_fields(s.node, as_fields(f), "join") for s, f in zip(streams, on, strict=True)
        ]
        rest = [
            Fields([n for n in s.node.fields if n not in k])
            for s, k in zip(streams, keys, strict=True)
        ]
        out = as_fields(out_fields)
        width = len(keys[0]) + sum(len(r) for r in rest)
        if len({len(k) for k in keys}) != 1 or len(out) != width:
            counts = " and ".join(str(len(k)) for k in keys)
            msg = (
                f"join: {counts} join fields, {len(out)} output fields {out.to_list()}; "
                f"expected as many join fields on each side and {width} output fields (the "
                f"join fields, then each stream's others)"
            )
            raise InvalidTopologyError(msg)
        joiner = JoinerMultiReducer(types, [len(r) for r in rest])
        node = MultiReduceNode([s.node for s in streams], rest, joiner, out, keys)
        return Stream(self, self._add(node, "join"))

    def multi_reduce(self, *args: Any) -> Stream:
        """One reducer over the tuples of several streams of each batch (Storm's).

        ``multi_reduce([streams], reducer, out_fields)``, or with each stream's input
        fields first, ``multi_reduce([in_fields], [streams], reducer, out_fields)``; for
        two, ``multi_reduce(stream1, stream2, reducer, out_fields)`` and
        ``multi_reduce(in1, stream1, in2, stream2, reducer, out_fields)``. Streams are
        ``Stream``s with a :class:`MultiReducer`, run per batch partition, or
        ``GroupedStream``s with a :class:`GroupedMultiReducer`, run per group.
        """
        if len(args) == 4 and not isinstance(args[0], list | tuple):
            args = ([args[0], args[1]], args[2], args[3])
        elif len(args) == 6:
            args = ([args[0], args[2]], [args[1], args[3]], args[4], args[5])
        if len(args) == 3:
            streams, reducer, out_fields = list(args[0]), args[1], args[2]
            in_fields = [s.get_output_fields() for s in streams]
        elif len(args) == 4:
            in_fields, streams, reducer, out_fields = list(args[0]), list(args[1]), *args[2:]
        else:
            msg = "multi_reduce takes ([streams], reducer, out_fields) or ([in_fields], ...)"
            raise TypeError(msg)
        grouped = [isinstance(s, GroupedStream) for s in streams]
        if len(set(grouped)) != 1 or len(in_fields) != len(streams):
            msg = "multi_reduce: give streams, or grouped streams, each with its input fields"
            raise InvalidTopologyError(msg)
        wanted = GroupedMultiReducer if grouped[0] else MultiReducer
        if not isinstance(reducer, wanted):
            msg = f"multi_reduce: {type(reducer).__name__} is no {wanted.__name__}"
            raise TypeError(msg)
        nodes = [s.to_stream().node for s in streams]
        fields = [
            check_fields(n, as_fields(f), "multi_reduce")
            for n, f in zip(nodes, in_fields, strict=True)
        ]
        groups = [s.group for s in streams] if grouped[0] else None
        node = MultiReduceNode(nodes, fields, reducer, as_fields(out_fields), groups)
        return Stream(self, self._add(node, "multi_reduce"))

    def build(self) -> Topology:
        """The core topology that runs this one: submit it like any other."""
        from sparkstorm.trident.planner import plan

        return plan(self)
