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
