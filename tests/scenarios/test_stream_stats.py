"""Storm UI's per-stream statistics: output stats per stream, input stats per source."""

from __future__ import annotations

from sparkstorm import Bolt, Config, Fields, Spout, TopologyBuilder
from tests.conftest import run_on

N = 40


class TwoStreams(Spout):
    """Emits 0..N-1 once each, tracked: evens on ``evens``, odds on ``odds``."""

    def open(self, conf, context, collector):
        self.collector, self.next = collector, 0

    def next_tuple(self):
        if self.next < N:
            n, self.next = self.next, self.next + 1
            self.collector.emit([n], n, stream="odds" if n % 2 else "evens")

    def declare_output_fields(self, declarer):
        declarer.declare_stream("evens", Fields("n"))
        declarer.declare_stream("odds", Fields("n"))


class FailMultiplesOfFive(Bolt):
    """Acks its input, except the odd multiples of five, which it fails."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] % 5 == 0 and tup[0] % 2:
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


def test_statistics_per_stream_and_per_input(engine, spark):
    builder = TopologyBuilder()
    builder.set_spout("numbers", TwoStreams())
    joined = builder.set_bolt("both", FailMultiplesOfFive(), 2)
    joined.shuffle_grouping("numbers", "evens").shuffle_grouping("numbers", "odds")
    builder.set_bolt("evens_only", FailMultiplesOfFive()).shuffle_grouping("numbers", "evens")
    conf = Config()
    conf.set_message_timeout_secs(30)

    result = run_on(engine, builder.create_topology(), conf, spark, until_idle=True, duration=60)

    odd_fives = len([n for n in range(N) if n % 5 == 0 and n % 2])  # 5, 15, 25, 35
    spout = {row["stream"]: row for row in result.stats["numbers"]["output_stats"]}
    assert spout == {
        "evens": {"stream": "evens", "emitted": 20, "transferred": 40, "acked": 20, "failed": 0},
        "odds": {
            "stream": "odds",
            "emitted": 20,
            "transferred": 20,
            "acked": 20 - odd_fives,
            "failed": odd_fives,
        },
    }
    both = {(r["component"], r["stream"]): r for r in result.stats["both"]["input_stats"]}
    assert sorted(both) == [("numbers", "evens"), ("numbers", "odds")]
    assert [both["numbers", "evens"][k] for k in ("executed", "acked", "failed")] == [20, 20, 0]
    assert [both["numbers", "odds"][k] for k in ("executed", "acked", "failed")] == [
        20,
        20 - odd_fives,
        odd_fives,
    ]
    assert all(r["execute_latency_ms"] > 0 and r["process_latency_ms"] > 0 for r in both.values())
    (only,) = result.stats["evens_only"]["input_stats"]
    assert (only["component"], only["stream"], only["executed"], only["acked"]) == (
        "numbers",
        "evens",
        20,
        20,
    )
    assert result.stats["both"]["output_stats"] == []  # it never emits
