"""Bolts for the Spark engine's own tests, importable by the executors."""

from __future__ import annotations

import os
import socket

from sparkstorm import Bolt, Fields


class PidBolt(Bolt):
    """Emits the process id that runs execute."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit([os.getpid()], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("pid"))


class CountAndHold(Bolt):
    """Counts words in a dict and holds every input; on "flush" acks everything held
    and emits the counts."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.counts = {}
        self.held = []

    def execute(self, tup):
        word = tup[0]
        if word == "flush":
            for held in self.held:
                self.collector.ack(held)
            self.collector.emit([dict(sorted(self.counts.items())), len(self.held)], tup)
            self.collector.ack(tup)
            self.held = []
            return
        self.counts[word] = self.counts.get(word, 0) + 1
        self.held.append(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("counts", "held"))


class ClientBolt(Bolt):
    """Opens a socket (not picklable) in prepare(); names it in transient or not."""

    transient = ("client",)

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.client = socket.socket()
        self.seen = getattr(self, "seen", 0)

    def execute(self, tup):
        self.seen += 1
        assert self.client.fileno() >= 0
        self.collector.emit([self.seen], tup)
        self.collector.ack(tup)

    def cleanup(self):
        self.client.close()

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("seen"))


class LeakyClientBolt(ClientBolt):
    """The same bolt, forgetting to name its client in transient."""

    transient = ()


PREPARES: dict[int, int] = {}
"""Task id -> prepare calls in this process."""


class SharedThing:
    created = 0

    def __init__(self):
        SharedThing.created += 1


class StayPutBolt(Bolt):
    """Emits (pid, task, prepares of this task in this process, tuples seen by the task,
    shared objects created in this process, id of the shared object)."""

    transient = ("client",)

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.task = context.get_this_task_id()
        self.seen = 0
        self.client = object()  # stands for a connection: must survive moves
        PREPARES[self.task] = PREPARES.get(self.task, 0) + 1
        self.shared = context.shared_resource("stay-put-test", SharedThing)

    def execute(self, tup):
        self.seen += 1
        pid = os.getpid()
        row = [pid, self.task, PREPARES[self.task], self.seen, SharedThing.created, id(self.shared)]
        self.collector.emit(row, tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("pid", "task", "prepares", "seen", "created", "shared"))


class BigStateBolt(Bolt):
    """Acks every input; keeps a 100 kB attribute, pickled into every snapshot."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.table = "x" * 100_000
        self.seen = 0

    def execute(self, tup):
        self.seen += 1
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


class Sleepy(Bolt):
    """Sleeps ``secs`` in ``execute`` on the tuple whose value is 0, then acks it."""

    def __init__(self, secs):
        self.secs = secs

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] == 0:
            wait_here(self.secs)
        self.collector.ack(tup)


def wait_here(secs):
    """The user's own frame a blocked-call report must show."""
    import time

    time.sleep(secs)


class SlowPrepare(Bolt):
    """Waits ``secs`` in ``prepare``, then acks everything."""

    def __init__(self, secs):
        self.secs = secs

    def prepare(self, conf, context, collector):
        self.collector = collector
        wait_here(self.secs)

    def execute(self, tup):
        self.collector.ack(tup)


class RaisesOnOdd(Bolt):
    """Raises on odd numbers, each with a message of its own; acks the even ones."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] % 2:
            msg = f"{tup[0]} is odd"
            raise ValueError(msg)
        self.collector.ack(tup)
