"""Small topologies for the CLI tests, loaded by file path as users do."""

from __future__ import annotations

from sparkstorm import Bolt, Config, Fields, Spout, TopologyBuilder


class Counter(Spout):
    """Emits 0, 1, 2, ... forever, each tracked."""

    def open(self, conf, context, collector):
        self.collector = collector
        self.n = 0

    def next_tuple(self):
        self.collector.emit([self.n], msg_id=self.n)
        self.n += 1

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class HoldOdd(Bolt):
    """Acks even numbers, holds odd ones forever (they can only end by shutdown)."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.held = []

    def execute(self, tup):
        if tup[0] % 2:
            self.held.append(tup)
        else:
            self.collector.ack(tup)


class Silent(Bolt):
    """A bolt that forgot declare_output_fields."""

    def execute(self, tup):
        pass


def endless():
    builder = TopologyBuilder()
    builder.set_spout("counter", Counter())
    builder.set_bolt("hold", HoldOdd()).shuffle_grouping("counter")
    conf = Config()
    conf.set_message_timeout_secs(600)
    conf.set_max_spout_pending(50)
    return builder.create_topology(), conf


def undeclared_subscription():
    builder = TopologyBuilder()
    builder.set_spout("counter", Counter())
    builder.set_bolt("silent", Silent()).shuffle_grouping("counter")
    builder.set_bolt("after", Silent()).shuffle_grouping("silent")
    return builder.create_topology()


def bad_field():
    builder = TopologyBuilder()
    builder.set_spout("counter", Counter())
    builder.set_bolt("silent", Silent()).fields_grouping("counter", Fields("number"))
    return builder.create_topology()


NOT_A_TOPOLOGY = 42
