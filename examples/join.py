"""Storm's SingleJoinExample: two spouts joined on "id", each output anchored to both inputs.

    sparkstorm run examples/join.py

A joined tuple is anchored to the gender tuple and the age tuple, so both spouts' trees
stay open until the joined tuple is processed downstream (multi-anchoring).
"""

from __future__ import annotations

from sparkstorm import Bolt, Config, Fields, Spout, TopologyBuilder

UNTIL_IDLE = True
"""A finite job: ``sparkstorm run`` ends it once it is idle (a stream runs until stopped)."""


class RecordSpout(Spout):
    """Emits (id, value) for ids 0..count-1, tracked by id."""

    def __init__(self, field: str, values: list, count: int = 100):
        self.field, self.values, self.count = field, values, count

    def open(self, conf, context, collector):
        self.collector = collector
        self.next_id = 0

    def next_tuple(self):
        if self.next_id < self.count:
            i = self.next_id
            self.collector.emit([i, self.values[i % len(self.values)]], msg_id=i)
            self.next_id += 1

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", self.field))


class SingleJoinBolt(Bolt):
    """Joins one gender tuple and one age tuple per id; the output is anchored to both."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.waiting: dict[int, object] = {}

    def execute(self, tup):
        key = tup["id"]
        other = self.waiting.pop(key, None)
        if other is None:
            self.waiting[key] = tup  # held: its tree stays open until the match
            return
        gender, age = (tup, other) if tup.source_component == "gender" else (other, tup)
        self.collector.emit([key, gender["gender"], age["age"]], [gender, age])
        self.collector.ack(gender)
        self.collector.ack(age)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "gender", "age"))


class Sink(Bolt):
    """Acks joined tuples (where a real topology would write them out)."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)


def topology(count: int = 100):
    builder = TopologyBuilder()
    builder.set_spout("gender", RecordSpout("gender", ["male", "female"], count))
    builder.set_spout("age", RecordSpout("age", list(range(18, 60)), count))
    builder.set_bolt("join", SingleJoinBolt(), 2).fields_grouping(
        "gender", Fields("id")
    ).fields_grouping("age", Fields("id"))
    builder.set_bolt("sink", Sink()).shuffle_grouping("join")
    conf = Config()
    conf[Config.SPARKSTORM_CAPTURE] = ["join"]
    return builder.create_topology(), conf


def report(result) -> None:
    joined = result.captured.get(("join", "default"), [])
    print("joined:", ", ".join(f"{i}:{g}/{a}" for i, g, a in sorted(joined)[:5]), "...")
    for spout in ("gender", "age"):
        stats = result.stats[spout]
        print(f"{spout} acked: {stats['acked']:,}  failed: {stats['failed']:,}")
