"""``TridentBolt``: the core bolt that runs one group of a Trident topology's nodes.

A task holds the messages of a batch until one has come from every task upstream, then
runs its nodes over the batch partition in order, sends one message to every task
downstream on every edge out (anchored to the messages it held), and acks them. A
persist buffers its partition of the batch until the coordinator's commit tuple for
that txid arrives; it then writes the state and sends the new values on, anchored to
the commit tuple.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparkstorm._types import FailReason
from sparkstorm.errors import FailedException, ReportedFailedException
from sparkstorm.topology.components import Bolt
from sparkstorm.topology.declarers import OutputFieldsDeclarer
from sparkstorm.topology.tuple import Tuple
from sparkstorm.trident.columnar import as_columns, as_rows, concat
from sparkstorm.trident.nodes import (
    COLUMNS,
    CUSTOM,
    FIELDS,
    ROWS,
    TX,
    BatchInfo,
    CommitNode,
    Node,
    Row,
)
from sparkstorm.trident.wiring import (
    COMMIT_STREAM,
    SHARE_FIELDS,
    BatchKey,
    Edge,
    custom_chooser,
    deal,
)


@dataclass
class _Pending:
    held: list[Tuple] = field(default_factory=list)


class TridentBolt(Bolt):
    """Runs the nodes of one group, a batch partition at a time."""

    def __init__(
        self,
        nodes: list[Node],
        inputs: list[Edge],
        outputs: list[Edge],
        expected: dict[Any, int],
        leaves: list[Node] | None = None,
    ) -> None:
        self.nodes = nodes
        self.leaves = leaves or []
        """Named operations that nothing follows: their tuples go out on a stream each."""
        self.inputs = inputs
        self.outputs = outputs
        self.expected = expected
        """(source, commit phase) -> messages a batch brings from upstream."""
        self.slots: dict[int, list[tuple[str, int]]] = {}
        by_child = {(e.child, e.slot): e.edge_id for e in inputs}
        mine = {n.node_id for n in nodes}
        for node in nodes:
            self.slots[node.node_id] = [
                ("edge", by_child[(node.node_id, i)])
                if (node.node_id, i) in by_child or parent.node_id not in mine
                else ("node", parent.node_id)
                for i, parent in enumerate(node.parents)
            ]

    def input_labels(self) -> dict[str, str]:
        """What flows on each input stream, for the page's graph: fields, then how dealt."""
        nodes = {n.node_id: n for n in self.nodes}
        labels = {}
        for edge in self.inputs:
            fields = nodes[edge.child].parents[edge.slot].fields.to_list()
            dealt = edge.partitioning.kind
            if dealt == FIELDS:
                dealt += f"({', '.join(fields[i] for i in edge.partitioning.indexes)})"
            labels[edge.stream] = f"{', '.join(fields) or '(none)'} · {dealt}"
        return labels

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """One direct stream per edge out."""
        for edge in self.outputs:
            declarer.declare(SHARE_FIELDS, edge.stream, direct=True)
        for leaf in self.leaves:
            declarer.declare(leaf.fields, leaf.label)

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        """Prepare the nodes' operations and make the states of this partition."""
        self.collector = collector
        self.component_id = context.get_this_component_id()
        self.task_id = context.get_this_task_id()
        self.index = context.get_this_task_index()
        self.num_tasks = len(context.get_component_tasks(self.component_id))
        self.targets = {
            e.edge_id: context.get_component_tasks(e.to_component) for e in self.outputs
        }
        self.choosers = {
            e.edge_id: custom_chooser(
                e.partitioning.grouping,
                self.component_id,
                e.stream,
                self.task_id,
                self.targets[e.edge_id],
                context,
            )
            for e in self.outputs
            if e.partitioning.kind == CUSTOM
        }
        self.edge_of_stream = {e.stream: e for e in self.inputs}
        self.pending: dict[BatchKey, _Pending] = {}
        self.buffered: dict[int, tuple[int, dict[int, list[Row]]]] = {}
        """txid -> (attempt, persist node -> rows) waiting for the commit."""
        for node in self.nodes:
            node.open(conf, context, self.index, self.num_tasks)

    def cleanup(self) -> None:
        """Clean up the nodes' operations."""
        for node in self.nodes:
            node.close()

    def report_errors(self, errors: list[BaseException]) -> None:
        """Errors an operation reported without failing the batch."""
        for error in errors:
            self.collector.report_error(error)

    def execute(self, tup: Tuple) -> None:
        """A message of a batch, or the coordinator's commit tuple."""
        if tup.source_stream == COMMIT_STREAM:
            self._commit(tup)
            return
        key: BatchKey = tuple(tup.values[0])
        pending = self.pending.get(key)
        if pending is None:
            self._forget_older(key)
            pending = self.pending[key] = _Pending()
        pending.held.append(tup)
        if len(pending.held) < self.expected[(key[0], key[3])]:
            return
        del self.pending[key]
        self._run(key, self._received(pending.held), pending.held)

    def _received(self, held: list[Tuple]) -> dict[int, Any]:
        """Each edge's rows of the batch, in the order of their tasks upstream.

        Whatever order their messages came in: an attempt of a batch replayed holds them
        in the same order as the first, so it deals them out the same (``wiring.deal``).
        """
        parts: dict[int, list[Any]] = {}
        for tup in sorted(held, key=lambda t: t.source_task):
            edge = self.edge_of_stream[tup.source_stream]
            parts.setdefault(edge.edge_id, []).append(tup.values[1])
        return {edge_id: concat(shares) for edge_id, shares in parts.items()}

    def _forget_older(self, key: BatchKey) -> None:
        """A new attempt of a batch: what an older attempt left here is dropped."""
        source, txid, attempt, _ = key
        stale = [k for k in self.pending if k[0] == source and k[1] == txid and k[2] < attempt]
        for old in stale:
            for held in self.pending.pop(old).held:
                self.collector.ack(held)

    def _run(self, key: BatchKey, received: dict[int, list[Row]], held: list[Tuple]) -> None:
        source, txid, attempt, commit_phase = key
        batch = BatchInfo(source, txid, attempt, self.index, self.num_tasks)
        outputs: dict[int, list[Row]] = {}
        try:
            for node in self.nodes:
                if source not in node.sources:
                    continue
                if isinstance(node, CommitNode) and node.buffered:
                    if not commit_phase:
                        rows = self._inputs(node, received, outputs)[0]  # as the node takes
                        entry = self.buffered.get(txid)
                        if entry is None or entry[0] != attempt:
                            entry = self.buffered[txid] = (attempt, {})
                        entry[1][node.node_id] = rows
                    continue
                if node.commit_phase != commit_phase:
                    continue
                inputs = self._inputs(node, received, outputs)
                if isinstance(node, CommitNode):
                    outputs[node.node_id] = node.write(txid, inputs[0], self)
                else:
                    outputs[node.node_id] = node.run(batch, inputs, self)
        except Exception as exc:
            self._failed(exc, node, held)
            return
        self._send(key, outputs, held)
        for tup in held:
            self.collector.ack(tup)

    def _failed(self, exc: Exception, node: Node, held: list[Tuple]) -> None:
        """An operation raised: report it, and fail the batch naming the operation."""
        if not isinstance(exc, FailedException) or isinstance(exc, ReportedFailedException):
            self.collector.report_error(exc)
        reason = FailReason(
            "error", self.component_id, self.task_id, f"{node.label}: {type(exc).__name__}: {exc}"
        )
        for tup in held:
            self.collector.fail_with(tup, reason)

    def _inputs(self, node: Node, received: dict[int, Any], outputs: dict[int, Any]) -> list[Any]:
        """The node's input partitions, one a parent, as rows or columns as it takes them."""
        parts = [
            received.get(ref, []) if kind == "edge" else outputs.get(ref, [])
            for kind, ref in self.slots[node.node_id]
        ]
        if node.takes == ROWS:
            return [as_rows(p) for p in parts]
        if node.takes == COLUMNS:
            return [
                as_columns(p, parent.fields) for p, parent in zip(parts, node.parents, strict=True)
            ]
        return parts

    def _send(self, key: BatchKey, outputs: dict[int, list[Row]], anchors: list[Tuple]) -> None:
        source, txid, _, commit_phase = key
        for leaf in self.leaves:
            for row in as_rows(outputs.get(leaf.node_id, [])):
                self.collector.emit(row, None, leaf.label)
        for edge in self.outputs:
            if source not in edge.sources or edge.commit_phase != commit_phase:
                continue
            targets = self.targets[edge.edge_id]
            shares = deal(
                outputs.get(edge.node, []),
                edge.partitioning,
                len(targets),
                txid,
                self.index,
                self.choosers.get(edge.edge_id),
            )
            for task, rows in zip(targets, shares, strict=True):
                self.collector.emit_direct(task, [key, rows], anchors, edge.stream)

    def _commit(self, tup: Tuple) -> None:
        """Write the buffered partitions of a batch, then send the new values on.

        A batch in which no spout emitted anything is committed too when a window must
        see time pass: nothing was buffered for it.
        """
        txid, attempt, empty = tup.values[0]
        entry = self.buffered.pop(txid, None)
        for old in [t for t in self.buffered if t < txid]:
            del self.buffered[old]
        if entry is None and empty:
            entry = (attempt, {})
        if entry is None or entry[0] != attempt:
            self.collector.fail(tup)  # this task lost its partition of the batch: replay it
            return
        key: BatchKey = (TX, txid, attempt, True)
        outputs: dict[int, list[Row]] = {}
        try:
            for node in self.nodes:
                if TX not in node.sources or not node.commit_phase:
                    continue
                if isinstance(node, CommitNode) and node.buffered:
                    outputs[node.node_id] = node.write(txid, entry[1].get(node.node_id, []), self)
                elif all(
                    kind == "node" and ref in outputs for kind, ref in self.slots[node.node_id]
                ):
                    outputs[node.node_id] = node.run(
                        BatchInfo(TX, txid, attempt, self.index, self.num_tasks),
                        self._inputs(node, {}, outputs),
                        self,
                    )
        except Exception as exc:
            self._failed(exc, node, [tup])
            return
        self._send(key, outputs, [tup])
        self.collector.ack(tup)
