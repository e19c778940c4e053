"""Storm's starter ExclamationTopology: words -> exclaim1 (3 tasks) -> exclaim2 (2 tasks).

sparkstorm run examples/exclamation.py
"""

from __future__ import annotations

import random

from sparkstorm import Bolt, Config, Fields, Spout, TopologyBuilder

UNTIL_IDLE = True
"""A finite job: ``sparkstorm run`` ends it once it is idle (a stream runs until stopped)."""

WORDS = ["nathan", "mike", "jackson", "golda", "bertels"]


class TestWordSpout(Spout):
    """Emits ``count`` random words from Storm's list, each tracked by its index."""

    __test__ = False  # not a pytest class

    def __init__(self, count: int = 1000, seed: int = 7):
        self.count, self.seed = count, seed

    def open(self, conf, context, collector):
        self.collector = collector
        self.rng = random.Random(self.seed)
        self.sent = 0

    def next_tuple(self):
        if self.sent < self.count:
            self.collector.emit([self.rng.choice(WORDS)], msg_id=self.sent)
            self.sent += 1

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class ExclamationBolt(Bolt):
    """Appends "!!!" to the word, anchored to the input, then acks it."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit([tup[0] + "!!!"], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


def topology(count: int = 1000):
    builder = TopologyBuilder()
    builder.set_spout("word", TestWordSpout(count), 1)
    builder.set_bolt("exclaim1", ExclamationBolt(), 3).shuffle_grouping("word")
    builder.set_bolt("exclaim2", ExclamationBolt(), 2).shuffle_grouping("exclaim1")
    conf = Config()
    conf[Config.SPARKSTORM_CAPTURE] = ["exclaim2"]
    return builder.create_topology(), conf


def report(result) -> None:
    words = result.captured.get(("exclaim2", "default"), [])
    print("sample:", ", ".join(values[0] for values in words[:5]))
    spout = result.stats["word"]
    print(f"words acked: {spout['acked']:,}  failed: {spout['failed']:,}")
