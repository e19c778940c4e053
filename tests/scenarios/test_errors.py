"""Bad input at run time: a clear error naming component and stream, never a hang or a drop."""

from __future__ import annotations

import re
import threading

import pytest

from sparkstorm import Bolt, ComponentStateError, Config, Fields, Spout, TopologyBuilder
from sparkstorm.testing import FeederSpout
from tests.scenarios.bolts import Ack, Raiser
from tests.scenarios.bolts_extra import BadEmitter
from tests.scenarios.spouts import OneShotSpout

CASES = {
    "arity": "emitted 2 value(s) ['a', 'b'] on stream 'default', which declares 1 field(s)",
    "stream": "emitted to stream 'nope', which it does not declare",
    "direct": "emitted directly to task 999 on stream 'direct'",
    "direct-on-regular": "used emit_direct on stream 'default', which is not a direct stream",
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_bad_emit_is_reported_and_fails_the_tree(engine, cluster_factory, kind):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("kind"))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("emitter", BadEmitter()).shuffle_grouping("in")
    builder.set_bolt("sink", Ack()).shuffle_grouping("emitter")
    cluster.submit_topology("bad", Config(), builder.create_topology())
    feeder.feed([kind], 1)
    feeder.feed(["arity-free"], 2)
    cluster.wait_until_idle()
    assert feeder.failed == [1] and feeder.acked == [2]
    (error,) = cluster.errors("bad")
    assert error.component == "emitter"
    assert CASES[kind] in error.message


def test_spout_error_is_reported_with_component_and_task(engine, cluster_factory):
    cluster = cluster_factory(engine)
    builder = TopologyBuilder()
    builder.set_spout("wrong", OneShotSpout(["a", "b"], 1, Fields("x")))  # 2 values, 1 field
    builder.set_bolt("sink", Ack()).shuffle_grouping("wrong")
    cluster.submit_topology("spout-error", Config(), builder.create_topology())
    cluster.wait_until_idle()
    (error,) = cluster.errors("spout-error")
    assert error.component == "wrong" and "declares 1 field(s)" in error.message


class HoldsALock(Bolt):
    def __init__(self):
        self.lock = threading.Lock()

    def execute(self, tup):
        pass


def test_component_that_cannot_be_copied_names_itself(cluster_factory):
    cluster = cluster_factory("local")
    builder = TopologyBuilder()
    builder.set_spout("in", FeederSpout(Fields("x")))
    builder.set_bolt("locked", HoldsALock()).shuffle_grouping("in")
    with pytest.raises(ComponentStateError, match=r"component 'locked'.*prepare"):
        cluster.submit_topology("lock", Config(), builder.create_topology())


def test_wait_until_idle_never_hangs(cluster_factory):
    from sparkstorm import IdleTimeoutError

    class Endless(Spout):
        def open(self, conf, context, collector):
            self.collector = collector

        def next_tuple(self):
            self.collector.emit(["x"])

        def declare_output_fields(self, declarer):
            declarer.declare(Fields("x"))

    cluster = cluster_factory("local")
    builder = TopologyBuilder()
    builder.set_spout("endless", Endless())
    builder.set_bolt("sink", Ack()).shuffle_grouping("endless")
    cluster.submit_topology("endless", Config(), builder.create_topology())
    with pytest.raises(IdleTimeoutError, match="'endless' is not idle"):
        cluster.wait_until_idle(timeout=0.5)


def test_bad_config_value_names_the_key(cluster_factory):
    from sparkstorm import InvalidTopologyError

    cluster = cluster_factory("local")
    builder = TopologyBuilder()
    builder.set_spout("in", FeederSpout(Fields("x")))
    with pytest.raises(InvalidTopologyError, match=re.escape("'topology.acker.executors'")):
        cluster.submit_topology(
            "c", {Config.TOPOLOGY_ACKER_EXECUTORS: -1}, builder.create_topology()
        )


def test_repeated_errors_are_throttled_and_counted(engine, cluster_factory, caplog):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("word"))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("raiser", Raiser()).shuffle_grouping("in")
    conf = Config({Config.TOPOLOGY_MAX_ERROR_REPORT_PER_INTERVAL: 3})
    cluster.submit_topology("noisy", conf, builder.create_topology())
    for i in range(30):
        feeder.feed(["boom"], i)
    cluster.wait_until_idle()
    assert sorted(feeder.failed) == list(range(30))
    errors = cluster.errors("noisy")
    assert sum(e.count for e in errors) == 30  # every error counted
    assert len(errors) <= 4  # three kept in full, the rest counted on one record
    assert {e.message for e in errors} == {"RuntimeError: boom in execute"}
    # the driver logs them, on both engines: three, the first with the user's traceback
    logged = [r.getMessage() for r in caplog.records if "boom in execute" in r.getMessage()]
    assert len(logged) == 3 and sum("Traceback" in m for m in logged) == 1
    (trace,) = [e.traceback for e in errors if e.traceback]
    assert "tests/scenarios/bolts.py" in trace and "raise RuntimeError(msg)" in trace
    assert "sparkstorm/tasks" not in trace  # only the user's frames
