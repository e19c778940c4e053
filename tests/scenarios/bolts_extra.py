"""More scenario bolts, importable by Spark executors."""

from __future__ import annotations

from sparkstorm import Bolt


class ResetThenAckOnTick(Bolt):
    """Holds its inputs; resets their timeout on each tick; acks them on the n-th tick."""

    def __init__(self, ack_after):
        self.ack_after = ack_after

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.held = []
        self.ticks = 0

    def execute(self, tup):
        if not tup.is_tick():
            self.held.append(tup)
            return
        self.ticks += 1
        for held in self.held:
            if self.ticks >= self.ack_after:
                self.collector.ack(held)
            else:
                self.collector.reset_timeout(held)
        if self.ticks >= self.ack_after:
            self.held = []


class BadEmitter(Bolt):
    """Emits wrongly, as its input asks: wrong arity, undeclared stream, bad direct target."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        kind = tup[0]
        if kind == "arity":
            self.collector.emit(["a", "b"], tup)
        elif kind == "stream":
            self.collector.emit(["a"], tup, stream="nope")
        elif kind == "direct":
            self.collector.emit_direct(999, ["a"], tup, stream="direct")
        elif kind == "direct-on-regular":
            self.collector.emit_direct(1, ["a"], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        from sparkstorm import Fields

        declarer.declare(Fields("word"))
        declarer.declare(Fields("word"), stream="direct", direct=True)
