"""Compiles a Trident topology into core spouts and bolts, as Storm does.

Nodes are put into groups, each run by one :class:`TridentBolt`: a node joins its
parent's group unless its rows must be dealt anew (a repartition, an aggregation's
second step, a persist), it has parents in other groups, or it follows a spout. A state
query joins the group of the state it reads, where the state's partitions live. Every
Trident spout and DRPC function is run by one :class:`Coordinator` spout. Each edge
between groups is a direct stream (see ``trident/wiring.py``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from typing_extensions import override

from sparkstorm.config import SPARKSTORM_DRPC_SERVER
from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.builder import Topology, TopologyBuilder
from sparkstorm.topology.fields import Fields
from sparkstorm.trident.bolt import TridentBolt
from sparkstorm.trident.coordinator import COORDINATOR, Coordinator
from sparkstorm.trident.drpc import server_of
from sparkstorm.trident.nodes import (
    GLOBAL,
    IDENTITY,
    SHUFFLE,
    TX,
    BatchInfo,
    CommitNode,
    Node,
    Partitioning,
    PersistNode,
    Row,
    SourceNode,
    StateQueryNode,
    StaticStateNode,
)
from sparkstorm.trident.progress import Stored
from sparkstorm.trident.windowing import WindowNode
from sparkstorm.trident.wiring import COMMIT_STREAM, Edge

if TYPE_CHECKING:
    from sparkstorm.trident.topology import TridentTopology

MAX_NAME = 48
"""A bolt named after its operations is cut at this length."""


class ReturnNode(Node):
    """Where a DRPC function's stream ends: its rows are the request's answer."""

    def __init__(self, leaves: list[Node], server: Any, function: str) -> None:
        super().__init__(Fields(), list(leaves))
        self.partition(Partitioning(GLOBAL))
        self.given = server
        self.function = function
        self.label = f"drpc-return-{function}"

    @override
    def open(self, conf: dict[str, Any], context: Any, index: int, num: int) -> None:
        self.server = server_of(self.given, conf[SPARKSTORM_DRPC_SERVER])

    @override
    def run(self, batch: BatchInfo, inputs: list[list[Row]], task: Any) -> list[Row]:
        if self.server is not None:  # one the coordinator took the request from
            self.server.respond(batch.txid, [row for rows in inputs for row in rows])
        return []


def plan(topology: TridentTopology) -> Topology:
    """The core topology that runs ``topology``, in the steps of Storm's ``build()``.

    The graph completed (DRPC returns added, folded repartitions dropped) and checked;
    its nodes grouped into bolts; the edges between groups laid; then the coordinator
    spout and one bolt per group declared.
    """
    nodes, children = _completed(topology)
    for node in nodes:
        _check(node)
    _check_guarantees(topology, nodes)
    layout = _Layout(nodes, children)
    _check_identity_partitions(layout)
    builder = TopologyBuilder()
    builder.set_spout(COORDINATOR, _coordinator(topology, layout))
    _declare_bolts(builder, layout)
    return builder.create_topology()


def _completed(topology: TridentTopology) -> tuple[list[Node], dict[int, list[Node]]]:
    """The nodes to run (each DRPC function's return added) and each node's children."""
    nodes = list(topology.nodes)
    children: dict[int, list[Node]] = {n.node_id: [] for n in nodes}
    for node in nodes:
        for parent in node.parents:
            children[parent.node_id].append(node)
    nodes = [n for n in nodes if not (n.folded and not children[n.node_id])]
    for function, server in topology.drpc.items():
        source = ("drpc", function)
        leaves = [
            n for n in nodes if source in n.sources and not children[n.node_id] and not n.folded
        ]
        ret = ReturnNode(leaves, server, function)
        ret.node_id = len(topology.nodes) + len(nodes)
        nodes.append(ret)
    return nodes, children


class _Layout:
    """The nodes grouped into bolts, the bolts' names and parallelism, the edges between."""

    def __init__(self, nodes: list[Node], children: dict[int, list[Node]]) -> None:
        self.nodes, self.children = nodes, children
        self.group_of, self.groups = _grouped(nodes)
        self.names = _bolt_names(self.groups)
        self.parallelism = [max(n.parallelism or 1 for n in group) for group in self.groups]
        self.edges = self._edges()

    def component(self, group: int) -> str:
        """The core component that runs ``group`` (-1: the coordinator's sources)."""
        return COORDINATOR if group < 0 else self.names[group]

    def _edges(self) -> list[Edge]:
        """One edge per parent in another group: a direct stream between two components."""
        edges: list[Edge] = []
        group_of = self.group_of
        for node in self.nodes:
            if group_of.get(node.node_id, -1) < 0:
                continue
            for slot, parent in enumerate(node.parents):
                if group_of[parent.node_id] == group_of[node.node_id]:
                    continue
                edges.append(
                    Edge(
                        edge_id=len(edges),
                        node=parent.node_id,
                        child=node.node_id,
                        slot=slot,
                        from_component=self.component(group_of[parent.node_id]),
                        to_component=self.component(group_of[node.node_id]),
                        partitioning=node.partitionings[slot] or Partitioning(SHUFFLE),
                        sources=parent.sources,
                        commit_phase=parent.commit_phase,
                    )
                )
        return edges

    def sent_by(self, edge: Edge) -> int:
        """How many tasks send on ``edge`` (the coordinator is one)."""
        if edge.from_component == COORDINATOR:
            return 1
        return self.parallelism[self.names.index(edge.from_component)]

    def named_leaves(self) -> set[int]:
        """Named nodes that nothing follows: their tuples go out on a stream of their name."""
        return {
            n.node_id
            for n in self.nodes
            if n.named
            and not self.children.get(n.node_id)
            and self.group_of.get(n.node_id, -1) >= 0
        }


def _grouped(nodes: list[Node]) -> tuple[dict[int, int], list[list[Node]]]:
    """Each node's group (-1: a source, run by the coordinator), and the groups' nodes.

    A node joins its parent's group unless it starts one (``_starts_group``); a state
    query joins the group of the persist it reads.
    """
    group_of: dict[int, int] = {}
    groups: list[list[Node]] = []
    for node in nodes:
        if isinstance(node, SourceNode):
            group_of[node.node_id] = -1
            continue
        if isinstance(node, StaticStateNode):
            continue
        if isinstance(node, StateQueryNode) and isinstance(node.state_node, PersistNode):
            group = group_of[node.state_node.node_id]
        elif _starts_group(node, group_of):
            group = len(groups)
            groups.append([])
        else:
            group = group_of[node.parents[0].node_id]
        group_of[node.node_id] = group
        groups[group].append(node)
    return group_of, groups


def _check_identity_partitions(layout: _Layout) -> None:
    """An identity partition sends partition i to partition i: both sides equally wide."""
    for edge in layout.edges:
        if edge.partitioning.kind != IDENTITY:
            continue
        sent, got = layout.sent_by(edge), layout.parallelism[layout.group_of[edge.child]]
        if sent != got:
            msg = (
                f"identity_partition() from {edge.from_component!r} ({sent} partitions) "
                f"to {edge.to_component!r} ({got}): it sends each partition to the one "
                f"of the same index, so both need the same parallelism_hint"
            )
            raise InvalidTopologyError(msg, component=edge.to_component)


def _coordinator(topology: TridentTopology, layout: _Layout) -> Coordinator:
    """The spout that runs every Trident spout and DRPC function, and the commits."""
    by_node = {n.node_id: n for n in layout.nodes}
    spout_edges: dict[str, list[Edge]] = {tx: [] for tx in topology.spouts}
    drpc_edges: dict[str, list[Edge]] = {f: [] for f in topology.drpc}
    for edge in layout.edges:
        origin = by_node[edge.node]
        if isinstance(origin, SourceNode):
            (spout_edges if TX in origin.sources else drpc_edges)[origin.key].append(edge)
    nodes = layout.nodes
    states: list[tuple[str, Stored]] = [
        (n.label, n.factory) for n in nodes if isinstance(n, PersistNode | WindowNode)
    ]
    return Coordinator(
        topology.spouts,
        spout_edges,
        topology.drpc,
        drpc_edges,
        states,
        committers=any(isinstance(n, CommitNode) for n in nodes),
        commit_empty=any(isinstance(n, WindowNode) and not n.config.by_count for n in nodes),
    )


def _declare_bolts(builder: TopologyBuilder, layout: _Layout) -> None:
    """One :class:`TridentBolt` per group, subscribed to its edges in.

    A group that holds a persist or a window takes the coordinator's commits too.
    """
    leaves = layout.named_leaves()
    for i, members in enumerate(layout.groups):
        name = layout.component(i)
        inputs = [e for e in layout.edges if e.to_component == name]
        outputs = [e for e in layout.edges if e.from_component == name]
        expected: dict[Any, int] = {}
        for edge in inputs:
            for source in edge.sources:
                key = (source, edge.commit_phase)
                expected[key] = expected.get(key, 0) + layout.sent_by(edge)
        bolt = TridentBolt(
            members, inputs, outputs, expected, [n for n in members if n.node_id in leaves]
        )
        declarer = builder.set_bolt(name, bolt, layout.parallelism[i])
        for edge in inputs:
            declarer.direct_grouping(edge.from_component, edge.stream)
        if any(_buffered(n) for n in members):
            declarer.all_grouping(COORDINATOR, COMMIT_STREAM)


def _bolt_names(groups: list[list[Node]]) -> list[str]:
    """Each group's bolt id: the first name a user gave one of its operations, else ``b-N``.

    ``b-N`` is followed by its operations' names (``b-1-Count``, ``b-2-Split-MapGet``), so
    the page, the API and the live table show what each bolt runs.
    """
    names: list[str] = []
    for i, group in enumerate(groups):
        named = [n.label for n in group if n.named and n.label not in names]
        operations = dict.fromkeys(re.sub(r"-\d+$", "", n.label) for n in group if n.label)
        name = named[0] if named else "-".join([f"b-{i}", *operations])[:MAX_NAME]
        if name == COORDINATOR or name in names:
            msg = f"two bolts would be named {name!r}: give the operations different names"
            raise InvalidTopologyError(msg, component=name)
        names.append(name)
    return names


def _buffered(node: Node) -> bool:
    return isinstance(node, CommitNode) and node.buffered


def _starts_group(node: Node, group_of: dict[int, int]) -> bool:
    parent_groups = {group_of.get(p.node_id) for p in node.parents}
    return (
        isinstance(node, PersistNode)
        or any(p is not None for p in node.partitionings)
        or len(parent_groups) != 1
        or -1 in parent_groups
        or len({p.commit_phase for p in node.parents}) != 1
    )


REFUSED = {
    ("opaque", "transactional"): (
        "a replayed batch of an opaque spout may hold other tuples, which a transactional "
        "map would skip as applied already"
    ),
    ("non-transactional", "transactional"): (
        "a replayed batch of a core spout holds other messages, which a transactional map "
        "would skip, where a commit was half written before the failure, as applied "
        "already, and then ack: they would be lost"
    ),
}
"""(spout, state) guarantees whose pairing can lose or double-count tuples, and why."""


def _check_guarantees(topology: TridentTopology, nodes: list[Node]) -> None:
    """Refuse a spout and a state on one path that would break exactly-once silently."""
    for node in nodes:
        if not isinstance(node, CommitNode):
            continue
        drpc = sorted(str(s[1]) for s in node.sources if s != TX)
        if drpc:
            what = "persists" if isinstance(node, PersistNode) else "windows"
            msg = (
                f"{node.label} {what} a stream of DRPC function {drpc[0]!r}: a DRPC "
                f"request is no batch of the spouts and is never committed, so nothing "
                f"would be written. Query states from DRPC streams (state_query); persist "
                f"and window the spouts' streams"
            )
            raise InvalidTopologyError(msg, component=node.label)
        if not isinstance(node, PersistNode):
            continue
        state = node.factory.state_type()
        for tx_id in _spouts_upstream(node):
            spout = topology.spouts[tx_id].guarantee
            why = REFUSED.get((spout, state or ""))
            if why is not None:
                use = (
                    "OpaqueMap, or the store's .opaque(...)"
                    if spout == "opaque"
                    else ("an opaque map (at-least-once), or a transactional spout")
                )
                msg = (
                    f"the {spout} spout {tx_id!r} feeds {node.label}, a {state} map state "
                    f"({type(node.factory).__name__}): {why}. Use {use}"
                )
                raise InvalidTopologyError(msg, component=node.label)


def _spouts_upstream(node: Node) -> set[str]:
    """The tx ids of the spouts whose tuples reach ``node``."""
    found: set[str] = set()
    seen: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.node_id in seen:
            continue
        seen.add(current.node_id)
        if isinstance(current, SourceNode) and TX in current.sources:
            found.add(current.key)
        stack.extend(current.parents)
    return found


def _check(node: Node) -> None:
    if len(node.sources) > 1:
        named = sorted(str(s) for s in node.sources)
        msg = (
            f"{node.label} takes tuples from streams of different batches ({named}): "
            f"merge or join streams of the same spouts (or of one DRPC function) only"
        )
        raise InvalidTopologyError(msg)
    if not isinstance(node, PersistNode) and len({p.commit_phase for p in node.parents}) > 1:
        msg = (
            f"{node.label} merges a state's new values with a stream of the batch "
            f"itself; they come in different phases of the batch: keep them apart"
        )
        raise InvalidTopologyError(msg)
