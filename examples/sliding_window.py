"""Storm's starter SlidingWindowTopology: a sliding sum and a tumbling average.

    sparkstorm run examples/sliding_window.py        # a stream: until Ctrl-C or --duration

``integers`` emits a seeded stream of random integers, each with a msg id. ``slidingsum`` keeps the
sum of the last 30, sliding by 10, incrementally from ``get_new()`` and
``get_expired()``; ``tumblingavg`` averages every 3 sums. Each integer is acked once it
has left every window it can be in, and every sum is anchored to its window's integers,
so a failure anywhere replays the integers it came from. At a stop, the integers still
waiting for a later window (a sliding window always holds some) fail with reason
``shutdown``.
"""

from __future__ import annotations

import random
from collections import deque

from sparkstorm import Config, Count, Fields, Spout, TopologyBuilder, WindowedBolt


def integers(seed: int = 7):
    """The stream's values: seeded random integers in 0..999."""
    rng = random.Random(seed)
    while True:
        yield rng.randrange(1000)


class IntegerSpout(Spout):
    """Emits a seeded stream of integers, each tracked by its index; replays what fails.

    It keeps the values of pending integers only: a stream runs for as long as it likes.
    """

    def __init__(self, seed: int = 7):
        self.seed = seed

    def open(self, conf, context, collector):
        self.collector = collector
        self.values = integers(self.seed)
        self.emitted = 0
        self.pending: dict[int, int] = {}
        self.replays: deque[int] = deque()

    def next_tuple(self):
        if self.replays:
            i = self.replays.popleft()
        else:
            i, self.emitted = self.emitted, self.emitted + 1
            self.pending[i] = next(self.values)
        self.collector.emit([self.pending[i], i], msg_id=i)

    def ack(self, msg_id):
        del self.pending[msg_id]

    def fail(self, msg_id, reason=None):
        self.replays.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value", "id"))


class SlidingWindowSum(WindowedBolt):
    """The sum of the window, kept up to date from what came in and what left."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.total = 0

    def execute(self, window):
        self.total += sum(t["value"] for t in window.get_new())
        self.total -= sum(t["value"] for t in window.get_expired())
        self.collector.emit([self.total])  # anchored to the window's integers

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("sum"))


class TumblingWindowAverage(WindowedBolt):
    """The average of each window of sums."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, window):
        sums = [t["sum"] for t in window.get()]
        self.collector.emit([sum(sums) / len(sums)])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("average"))


def topology():
    """The topology and its configuration."""
    builder = TopologyBuilder()
    builder.set_spout("integers", IntegerSpout())
    builder.set_bolt(
        "slidingsum", SlidingWindowSum().with_window(Count(30), Count(10))
    ).shuffle_grouping("integers")
    builder.set_bolt(
        "tumblingavg", TumblingWindowAverage().with_tumbling_window(Count(3))
    ).shuffle_grouping("slidingsum")
    conf = Config()
    conf.set_max_spout_pending(1000)
    conf[Config.SPARKSTORM_CAPTURE] = ["slidingsum", "tumblingavg"]
    return builder.create_topology(), conf


def report(result) -> None:
    """Print the last averages, as Storm's PrinterBolt would."""
    averages = [values[0] for values in result.captured.get(("tumblingavg", "default"), [])]
    print(f"{len(averages)} averages; the last three: {[round(a, 1) for a in averages[-3:]]}")
