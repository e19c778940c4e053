"""Small topologies for the CLI tests, loaded by file path as users do."""

from __future__ import annotations

import logging
import time

from sparkstorm import Bolt, Config, Fields, Spout, StatefulBolt, TopologyBuilder, TopologyHalted
from tests.scenarios.bolts import Ack


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


class Finite(Spout):
    """Emits 0..n-1 once each, tracked."""

    def __init__(self, n=20):
        self.n = n

    def open(self, conf, context, collector):
        self.collector = collector
        self.next = 0

    def next_tuple(self):
        if self.next < self.n:
            self.collector.emit([self.next], msg_id=self.next)
            self.next += 1

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class Boom(Bolt):
    """Raises on every tuple."""

    def execute(self, tup):
        msg = "no good"
        raise ValueError(msg)


class AckOnTick(Bolt):
    """Buffers its inputs and acks them all on each tick, as a batching sink does."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.buffer = []

    def execute(self, tup):
        if tup.is_tick():
            for held in self.buffer:
                self.collector.ack(held)
            self.buffer.clear()
            self.collector.ack(tup)
        else:
            self.buffer.append(tup)


def failing():
    builder = TopologyBuilder()
    builder.set_spout("finite", Finite())
    builder.set_bolt("boom", Boom()).shuffle_grouping("finite")
    return builder.create_topology()


def buffered():
    builder = TopologyBuilder()
    builder.set_spout("counter", Counter())
    builder.set_bolt("sink", AckOnTick()).shuffle_grouping("counter").add_configuration(
        Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 1
    )
    conf = Config()
    conf.set_max_spout_pending(20)
    return builder.create_topology(), conf


class BlockAfterTen(Spout):
    """Emits ten tracked tuples, then blocks in next_tuple, as a careless broker poll does."""

    def open(self, conf, context, collector):
        self.collector = collector
        self.n = 0

    def next_tuple(self):
        if self.n == 10:
            time.sleep(600)
        self.collector.emit([self.n], msg_id=self.n)
        self.n += 1

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


def blocking():
    builder = TopologyBuilder()
    builder.set_spout("blocker", BlockAfterTen())
    builder.set_bolt("hold", HoldOdd()).shuffle_grouping("blocker")
    conf = Config()
    conf.set_message_timeout_secs(2)
    return builder.create_topology(), conf


class Paced(Spout):
    """Emits 0, 1, 2, ... tracked, at most one every 2 ms, for as long as it runs."""

    def open(self, conf, context, collector):
        self.collector = collector
        self.n = 0
        self.last = 0.0

    def next_tuple(self):
        if time.monotonic() - self.last >= 0.002:
            self.last = time.monotonic()
            self.collector.emit([self.n], msg_id=self.n)
            self.n += 1

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


COUNT_LOG = logging.getLogger("tests.count")


class AckSaying(Ack):
    """Acks every input; says so at INFO every 100th (seen once the level is turned down)."""

    def execute(self, tup):
        super().execute(tup)
        if tup.values[0] % 100 == 0:
            COUNT_LOG.info("acked %d", tup.values[0])


def steady():
    """Runs until stopped, acking everything: for the REST API and the CLI verbs."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", Paced())
    builder.set_bolt("ack", AckSaying(), 2).shuffle_grouping("numbers")
    conf = Config()
    conf.set_max_spout_pending(100)
    return builder.create_topology(), conf


class CountLastDigits(StatefulBolt):
    """Counts numbers by last digit in its state, and acks them."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def init_state(self, state):
        self.counts = state

    def execute(self, tup):
        digit = tup.values[0] % 10
        self.counts.put(digit, self.counts.get(digit, 0) + 1)
        if tup.values[0] % 100 == 0:  # at INFO: seen once someone turns the level down
            COUNT_LOG.info("counted %d", tup.values[0])
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


def steady_stateful():
    """:func:`steady` with its acks in a stateful bolt: checkpoints every 200 ms."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", Paced())
    builder.set_bolt("count", CountLastDigits(), 2).shuffle_grouping("numbers")
    conf = Config()
    conf.set_max_spout_pending(100)
    conf["topology.state.checkpoint.interval.ms"] = 200
    return builder.create_topology(), conf


class Sometimes(Bolt):
    """Passes ``n`` on, anchored; fails every 40th, and reports every 400th as an error."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        n = tup.values[0]
        if n % 40 == 39:
            if n % 400 == 399:
                self.collector.report_error(ValueError(f"{n} is not wanted"))
            self.collector.fail(tup)
            return
        self.collector.emit([n], anchors=[tup])
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


def observed():
    """Runs until stopped, with some failures and errors: for the web page."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", Paced())
    builder.set_bolt("check", Sometimes(), 2).shuffle_grouping("numbers")
    builder.set_bolt("store", Ack(), 2).fields_grouping("check", Fields("n"))
    conf = Config()
    conf.set_max_spout_pending(100)
    return builder.create_topology(), conf


class HaltsLater(Ack):
    """Acks every input; ``secs`` after its first, says the run cannot go on (a halt)."""

    def __init__(self, secs):
        self.secs = secs

    def execute(self, tup):
        super().execute(tup)
        self.first = getattr(self, "first", time.monotonic())
        if time.monotonic() - self.first >= self.secs and not getattr(self, "said", False):
            self.said = True
            self.collector.report_error(TopologyHalted("the ledger is full: halting"))


def halting():
    """Runs for about 6 s, then halts: for the page that outlives its driver."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", Paced())
    builder.set_bolt("ack", HaltsLater(6.0)).shuffle_grouping("numbers")
    conf = Config()
    conf.set_max_spout_pending(100)
    return builder.create_topology(), conf


class Replaying(Spout):
    """Emits 0..n-1, tracked, and emits again what failed, as Storm's spouts replay."""

    def __init__(self, n=1000):
        self.n = n

    def open(self, conf, context, collector):
        self.collector = collector
        self.next = 0
        self.failed = []

    def next_tuple(self):
        if self.failed:
            n = self.failed.pop()
            self.collector.emit([n], msg_id=n)
        elif self.next < self.n:
            self.collector.emit([self.next], msg_id=self.next)
            self.next += 1

    def fail(self, msg_id):
        self.failed.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class FailSevensOnce(Bolt):
    """Fails each multiple of 7 the first time it comes, acks everything else."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.seen = set()

    def execute(self, tup):
        n = tup[0]
        if n % 7 == 0 and n not in self.seen:
            self.seen.add(n)
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)


def replaying():
    builder = TopologyBuilder()
    builder.set_spout("numbers", Replaying())
    builder.set_bolt("sevens", FailSevensOnce()).shuffle_grouping("numbers")
    return builder.create_topology()


class Forgetful(Bolt):
    """Executes every tuple and never acks it (a bolt that forgot ``ack``)."""

    def execute(self, tup):
        pass


def forgetful():
    builder = TopologyBuilder()
    builder.set_spout("finite", Finite())
    builder.set_bolt("forgetful", Forgetful()).shuffle_grouping("finite")
    conf = Config()
    conf.set_message_timeout_secs(1)
    return builder.create_topology(), conf


def misspelled():
    builder = TopologyBuilder()
    builder.set_spout("sentences", Finite())
    builder.set_bolt("boom", Boom()).shuffle_grouping("sentence")  # the typo's line
    return builder.create_topology()


class Backlog(Spout):
    """docs/arrow.md's pattern: a list of work; a failed message goes to its end, again."""

    def __init__(self, n, replays=True):
        self.n, self.replays = n, replays

    def open(self, conf, context, collector):
        from collections import deque

        self.collector, self.todo = collector, deque(range(self.n))

    def next_tuple(self):
        if self.todo:
            n = self.todo.popleft()
            self.collector.emit([n], msg_id=n)

    def fail(self, msg_id):
        if self.replays:
            self.todo.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class FailThirdsOnce(Bolt):
    """Fails each multiple of 3 the first time it comes, acks everything else."""

    def prepare(self, conf, context, collector):
        self.collector, self.seen = collector, set()

    def execute(self, tup):
        n = tup[0]
        if n % 3 == 0 and n not in self.seen:
            self.seen.add(n)
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)


def replaying_backlog():
    """A healthy stream: every failure is replayed, once the backlog before it is out."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", Backlog(10_000_000))
    builder.set_bolt("thirds", FailThirdsOnce()).shuffle_grouping("numbers")
    return builder.create_topology()


def dropping():
    """300 messages, and a spout that drops what fails (at most once, by choice)."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", Backlog(300, replays=False))
    builder.set_bolt("thirds", FailThirdsOnce()).shuffle_grouping("numbers")
    return builder.create_topology()
