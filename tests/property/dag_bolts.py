"""Random-behaviour bolts for property and differential tests.

Every decision is a pure function of the tuple's label and the receiving component, so
the same topology behaves the same on every engine. On the local engine each bolt also
records what it did in ``EVENTS``, from which an oracle rebuilds every tuple DAG without
any XOR arithmetic.
"""

from __future__ import annotations

import zlib

from sparkstorm import Bolt, Fields

EVENTS: list[tuple] = []
"""Records: ("recv", node, label), ("emit", label, anchors), ("ack", node), ("fail", node)."""


def choose(label: str, component: str, salt: str, n: int) -> int:
    return zlib.crc32(f"{label}|{component}|{salt}".encode()) % n


class RandomBolt(Bolt):
    """Emits 0-2 children anchored to the input (and a held tuple), then acks, fails or forgets.

    Percentages: ack 70, fail 10, forget 10, hold 10 (held until the task's next input,
    which then multi-anchors to it and acks it).
    """

    def __init__(self, record: bool = True):
        self.record = record

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.component = context.get_this_component_id()
        self.task = context.get_this_task_id()
        self.held = None

    def _log(self, *event):
        if self.record:
            EVENTS.append(event)

    def execute(self, tup):
        label = tup[0]
        node = f"{label}@{self.task}"
        self._log("recv", node, label)
        anchors = [tup] if self.held is None else [tup, self.held[0]]
        anchor_nodes = [node] if self.held is None else [node, self.held[1]]
        for k in range(choose(label, self.component, "n", 3)):
            child = f"{node}/{k}"
            self._log("emit", child, anchor_nodes)
            self.collector.emit([child], anchors)
        if self.held is not None:
            self._log("ack", self.held[1])
            self.collector.ack(self.held[0])
            self.held = None
        action = choose(label, self.component, "a", 10)
        if action < 7:
            self._log("ack", node)
            self.collector.ack(tup)
        elif action == 7:
            self._log("fail", node)
            self.collector.fail(tup)
        elif action == 9:
            self.held = (tup, node)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("label"))


def oracle(events: list[tuple], msg_ids: list[int]) -> dict[int, str]:
    """Expected outcome per msg id: "acked" iff every tuple of its DAG was acked, else
    "explicit" if any was failed, else "timeout"."""
    nodes_of: dict[str, list[str]] = {}
    children_of: dict[str, list[str]] = {}
    acked, failed = set(), set()
    for event in events:
        kind = event[0]
        if kind == "recv":
            nodes_of.setdefault(event[2], []).append(event[1])
        elif kind == "emit":
            for anchor in event[2]:
                children_of.setdefault(anchor, []).append(event[1])
        elif kind == "ack":
            acked.add(event[1])
        elif kind == "fail":
            failed.add(event[1])
    expected = {}
    for msg_id in msg_ids:
        tree, frontier = set(), list(nodes_of.get(f"m{msg_id}", []))
        while frontier:
            node = frontier.pop()
            if node in tree:
                continue
            tree.add(node)
            for child_label in children_of.get(node, []):
                frontier.extend(nodes_of.get(child_label, []))
        if tree & failed:
            expected[msg_id] = "explicit"
        elif tree <= acked:
            expected[msg_id] = "acked"
        else:
            expected[msg_id] = "timeout"
    return expected
