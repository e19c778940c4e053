"""The bolts of STORM_SPEC.md's public scenarios, importable by Spark executors."""

from __future__ import annotations

import os

from sparkstorm import BasicBolt, Bolt, FailedException, Fields


class AckEveryOther(Bolt):
    """Acks the 1st, 3rd, ... input; never the others."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.count = 0

    def execute(self, tup):
        self.count += 1
        if self.count % 2 == 1:
            self.collector.ack(tup)


class Branching(Bolt):
    """Emits [0] .. [n-1] anchored to the input, then acks it."""

    def __init__(self, n):
        self.n = n

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        for i in range(self.n):
            self.collector.emit([i], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("num"))


class Agg(Bolt):
    """Buffers inputs; at n, emits one tuple anchored to all n and acks them all."""

    def __init__(self, n):
        self.n = n

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.held = []

    def execute(self, tup):
        self.held.append(tup)
        if len(self.held) == self.n:
            self.collector.emit([len(self.held)], self.held)
            for held in self.held:
                self.collector.ack(held)
            self.held = []

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("num"))


class Ack(Bolt):
    """Acks every input."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)


class Fail(Bolt):
    """Fails every input."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.fail(tup)


class Forget(Bolt):
    """Neither acks nor fails: its trees can only time out."""

    def execute(self, tup):
        pass


class Identity(Bolt):
    """Emits the input's values anchored to it, then acks."""

    def __init__(self, fields=("num",)):
        self.fields = fields

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit(tup.values, tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields(*self.fields))


class SelfAnchor(Bolt):
    """Emits with anchors [input, input], then acks."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit(tup.values, [tup, tup])
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("field1"))


class TaskTagger(Bolt):
    """Emits [task id, process id] anchored to the input, then acks."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.task = context.get_this_task_id()

    def execute(self, tup):
        self.collector.emit([self.task, os.getpid()], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("task", "pid"))


class MaybeFailBasic(BasicBolt):
    """A BasicBolt: raises FailedException for the value "fail", else emits and returns."""

    def execute(self, tup, collector):
        if tup[0] == "fail":
            msg = "asked to fail"
            raise FailedException(msg)
        collector.emit([tup[0]])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class AckIfAsked(Bolt):
    """Acks inputs whose value is "ack", fails "fail", forgets the rest."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] == "ack":
            self.collector.ack(tup)
        elif tup[0] == "fail":
            self.collector.fail(tup)


class TickCounter(Bolt):
    """Counts ticks; on each tick emits the count (unanchored) and acks the tick."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.ticks = 0

    def execute(self, tup):
        if tup.is_tick():
            self.ticks += 1
            self.collector.emit([self.ticks])
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("ticks"))


class Raiser(Bolt):
    """Raises on the value "boom", acks the rest."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] == "boom":
            msg = "boom in execute"
            raise RuntimeError(msg)
        self.collector.ack(tup)


class Countdown(Bolt):
    """Subscribed to itself: emits ``n - 1`` anchored to ``n`` until 0, acks, counts runs."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.runs = 0

    def execute(self, tup):
        self.runs += 1
        if tup.values[0] > 0:
            self.collector.emit([tup.values[0] - 1], tup)
        else:
            self.collector.emit([self.runs], tup, stream="done")
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))
        declarer.declare_stream("done", Fields("runs"))
