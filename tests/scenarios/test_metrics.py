"""Storm's metrics API: registered metrics and built-ins reach the consumers, exactly."""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

from sparkstorm import Bolt, Config, Fields, InvalidTopologyError, Spout, TopologyBuilder
from sparkstorm.topology.metrics import CountMetric, MeanReducer, ReducedMetric
from tests.conftest import run_on

N = 40
RECEIVED: list = []


class Paced(Spout):
    """Emits 0..N-1, tracked, one every 10 ms (so the run spans several buckets)."""

    def open(self, conf, context, collector):
        self.collector, self.n, self.last = collector, 0, 0.0

    def next_tuple(self):
        if self.n < N and time.monotonic() - self.last >= 0.01:
            self.collector.emit([self.n], self.n)
            self.n, self.last = self.n + 1, time.monotonic()

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class Measured(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector
        self.count = context.register_metric("counted", CountMetric(), 0.1)
        self.mean = context.register_metric("mean-n", ReducedMetric(MeanReducer()), 0.1)

    def execute(self, tup):
        self.count.incr()
        self.mean.update(tup[0])
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


class Recording:
    """A metrics consumer (on the driver: this process) keeping what it receives."""

    def prepare(self, conf, argument, context, error_reporter):
        RECEIVED.append(("prepare", argument))

    def handle_data_points(self, task_info, data_points):
        for point in data_points:
            RECEIVED.append(
                (task_info.src_component_id, task_info.src_task_id, point.name, point.value)
            )

    def cleanup(self):
        RECEIVED.append(("cleanup",))


def test_registered_and_built_in_metrics_reach_the_consumer_exactly(engine, spark):
    RECEIVED.clear()
    builder = TopologyBuilder()
    builder.set_spout("numbers", Paced())
    builder.set_bolt("measured", Measured(), 2).shuffle_grouping("numbers")
    conf = Config()
    conf.register_metrics_consumer(Recording, argument={"tag": 1})
    conf["topology.builtin.metrics.bucket.size.secs"] = 0.2
    result = run_on(engine, builder.create_topology(), conf, spark, until_idle=True, duration=60)
    assert result.stats["numbers"]["acked"] == N
    assert RECEIVED[0] == ("prepare", {"tag": 1}) and RECEIVED[-1] == ("cleanup",)
    points = defaultdict(list)
    for component, _task, name, value in (r for r in RECEIVED if len(r) == 4):
        points[component, name].append(value)
    assert sum(points["measured", "counted"]) == N  # every bucket, the last one too
    assert len(points["measured", "counted"]) >= 2  # more than one bucket
    assert all(0 <= m <= N - 1 for m in points["measured", "mean-n"])
    assert sum(v.get("default", 0) for v in points["numbers", "__ack-count"]) == N
    assert sum(v.get("default", 0) for v in points["numbers", "__emit-count"]) == N
    executed = points["measured", "__execute-count"]
    assert sum(v.get("numbers:default", 0) for v in executed) == N
    assert any(points["numbers", "__complete-latency"])


def test_a_consumer_that_does_not_load_is_an_error_at_submit():
    builder = TopologyBuilder()
    builder.set_spout("numbers", Paced())
    conf = Config()
    conf.register_metrics_consumer("no.such.Consumer")
    with pytest.raises(InvalidTopologyError, match=r"cannot load 'no\.such\.Consumer'"):
        run_on("local", builder.create_topology(), conf, until_idle=True)
