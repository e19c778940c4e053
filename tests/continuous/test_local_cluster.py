"""LocalCluster on the continuous mode: what the scenario tests check through class
attributes of a spout (which a worker's spout cannot write), checked through the
FeederSpout relay and the statistics instead."""

from __future__ import annotations

import pytest

from sparkstorm import Config, Fields, TopologyBuilder
from sparkstorm.testing import FeederSpout, LocalCluster
from tests.continuous.components import OneArgumentFail
from tests.scenarios.bolts import Fail

pytestmark = pytest.mark.spark


@pytest.fixture
def cluster(spark):
    with LocalCluster("spark", simulated_time=True, spark=spark, mode="continuous") as cluster:
        yield cluster


def test_without_ackers_a_spout_gets_its_ack_at_once_and_never_a_fail(cluster):
    feeder = FeederSpout(Fields("x"))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("fails", Fail()).shuffle_grouping("in")  # not seen without ackers
    conf = Config()
    conf.set_num_ackers(0)
    conf.set_message_timeout_secs(10)
    cluster.submit_topology("no-ackers", conf, builder.create_topology())
    feeder.feed(["a"], "m1")
    cluster.wait_until_idle()
    cluster.advance_time(30)
    assert feeder.acked == ["m1"] and feeder.failed == []


def test_a_spout_with_storms_one_argument_fail_gets_its_failures(cluster):
    builder = TopologyBuilder()
    builder.set_spout("numbers", OneArgumentFail(3, replay=False))
    builder.set_bolt("fails", Fail()).shuffle_grouping("numbers")
    cluster.submit_topology("one-arg", Config(), builder.create_topology())
    cluster.wait_until_idle()
    stats = cluster.stats("one-arg")["numbers"]
    assert (stats["failed"], stats["fail_reasons"]) == (3, {"explicit": 3})
    assert cluster.errors("one-arg") == []
