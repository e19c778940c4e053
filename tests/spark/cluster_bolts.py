"""Components for the multi-process Spark tests, importable by executors."""

from __future__ import annotations

import os
import time
from collections import deque

from sparkstorm import Bolt, Fields, Spout, StatefulBolt

REGISTRY: dict = {"acked": set(), "failed": 0, "reasons": {}}
"""Outcomes seen by the spout (which runs in the driver process)."""


class ReplayingSpout(Spout):
    """Emits ids 0..n-1 once each and replays every id that fails, as a queue would."""

    def __init__(self, n):
        self.n = n

    def open(self, conf, context, collector):
        self.collector = collector
        self.todo = deque(range(self.n))

    def next_tuple(self):
        if self.todo:
            msg_id = self.todo.popleft()
            self.collector.emit([msg_id], msg_id)

    def ack(self, msg_id):
        REGISTRY["acked"].add(msg_id)

    def fail(self, msg_id, reason=None):
        REGISTRY["failed"] += 1
        kind = reason.kind if reason else "?"
        REGISTRY["reasons"][kind] = REGISTRY["reasons"].get(kind, 0) + 1
        self.todo.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id"))


class SlowIdentity(Bolt):
    """Emits its input anchored, then acks; a little slow so a run spans many supersteps."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        time.sleep(0.002)
        self.collector.emit(tup.values, tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id"))


class CountIds(StatefulBolt):
    """Counts each id in its ``KeyValueState``: exactly-once state shows as counts of 1."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def init_state(self, state):
        self.counts = state

    def execute(self, tup):
        msg_id = tup.values[0]
        self.counts.put(msg_id, self.counts.get(msg_id, 0) + 1)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


class DiesOnce(Bolt):
    """Acks; the first to find no ``marker`` file makes it and kills its Python worker."""

    def __init__(self, marker):
        self.marker = marker

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        try:
            with open(self.marker, "x"):
                pass
        except FileExistsError:
            self.collector.ack(tup)
        else:
            os._exit(1)  # as SIGKILL would: the task's attempt dies, Spark runs it again

    def declare_output_fields(self, declarer):
        pass
