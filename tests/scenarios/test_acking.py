"""STORM_SPEC.md's public scenarios P1-P10, plus Storm's own acking cases, on every engine."""

from __future__ import annotations

from typing import ClassVar

import pytest

from sparkstorm import Config, Fields, Spout, TopologyBuilder
from sparkstorm.testing import FeederSpout
from tests.scenarios.bolts import (
    Ack,
    AckEveryOther,
    AckIfAsked,
    Agg,
    Countdown,
    Fail,
    Forget,
    Identity,
    MaybeFailBasic,
    Raiser,
    SelfAnchor,
    TickCounter,
)
from tests.scenarios.spouts import OneShotSpout


def conf(**extra):
    c = Config()
    c.update({k.replace("_", "."): v for k, v in extra.items()})
    return c


SPOUTS_IN_THIS_PROCESS = pytest.mark.parametrize("engine", ["local", "spark"])
"""For tests whose spout records its calls in class attributes of this module, which only a
spout in the test's process writes: the continuous mode runs spouts in its workers (as a
Storm cluster does); tests/continuous checks the same behaviour there through the stats."""


def test_p1_timeout(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("field1"))
    builder = TopologyBuilder()
    builder.set_spout("1", feeder)
    builder.set_bolt("2", AckEveryOther()).global_grouping("1")
    c = Config()
    c.set_message_timeout_secs(10)
    c[Config.TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS] = True
    cluster.submit_topology("timeout", c, builder.create_topology())
    cluster.advance_time(11)
    feeder.feed(["a"], 1)
    feeder.feed(["b"], 2)
    feeder.feed(["c"], 3)
    cluster.advance_time(9)
    assert sorted(feeder.acked) == [1, 3]
    assert feeder.failed == []
    cluster.advance_time(12)
    assert feeder.failed == [2]
    assert [r.kind for r in feeder.fail_reasons] == ["timeout"]


def test_p2_branching(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("num"))
    builder = TopologyBuilder()
    builder.set_spout("1", feeder)
    builder.set_bolt("2", Identity()).shuffle_grouping("1")
    builder.set_bolt("3", Identity()).shuffle_grouping("1")
    builder.set_bolt("4", Agg(4)).shuffle_grouping("2").shuffle_grouping("3")
    cluster.submit_topology("branching", Config(), builder.create_topology())
    feeder.feed([1], 1)
    cluster.wait_until_idle()
    assert feeder.acked == []
    feeder.feed([1], 2)
    cluster.wait_until_idle()
    assert sorted(feeder.acked) == [1, 2]
    assert feeder.failed == []


def test_p3_self_anchor(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("field1"))
    builder = TopologyBuilder()
    builder.set_spout("1", feeder)
    builder.set_bolt("2", SelfAnchor()).shuffle_grouping("1")
    builder.set_bolt("3", Ack()).shuffle_grouping("2")
    cluster.submit_topology("self-anchor", Config(), builder.create_topology())
    feeder.feed(["a"], 1)
    cluster.wait_until_idle()
    assert feeder.acked == [1]
    for i in (2, 3, 4):
        feeder.feed(["a"], i)
    cluster.wait_until_idle()
    assert sorted(feeder.acked) == [1, 2, 3, 4]


def test_p4_all_grouping(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("num"))
    builder = TopologyBuilder()
    builder.set_spout("1", feeder)
    builder.set_bolt("2", Identity(), 6).all_grouping("1")
    builder.set_bolt("3", AckIfAsked()).shuffle_grouping("2")
    cluster.submit_topology("all", Config(), builder.create_topology(), capture=True)
    feeder.feed(["hold"], 1)
    cluster.wait_until_idle()
    assert cluster.captured("all", "2") == [["hold"]] * 6  # one output per task
    assert feeder.acked == []  # the six outputs are not acked
    feeder.feed(["ack"], 2)
    cluster.wait_until_idle()
    assert feeder.acked == [2]
    assert len(cluster.captured("all", "2")) == 12


class _EmitAckRecorder(Spout):
    """Records whether ack ran inside next_tuple (i.e. inside emit)."""

    log: ClassVar[list] = []

    def open(self, conf, context, collector):
        self.collector = collector
        self.inside = False
        self.sent = False

    def next_tuple(self):
        if not self.sent:
            self.sent = True
            self.inside = True
            self.collector.emit(["x"], "m1")
            self.inside = False

    def ack(self, msg_id):
        _EmitAckRecorder.log.append(("ack", msg_id, self.inside))

    def fail(self, msg_id):
        _EmitAckRecorder.log.append(("fail", msg_id, self.inside))

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("field1"))


@SPOUTS_IN_THIS_PROCESS
def test_p5_no_ackers_acks_inside_emit(engine, cluster_factory):
    cluster = cluster_factory(engine)
    _EmitAckRecorder.log = []
    builder = TopologyBuilder()
    builder.set_spout("1", _EmitAckRecorder())
    builder.set_bolt("2", Fail()).shuffle_grouping("1")  # even an explicit fail is not seen
    c = Config()
    c.set_num_ackers(0)
    c.set_message_timeout_secs(10)
    cluster.submit_topology("no-ackers", c, builder.create_topology())
    cluster.wait_until_idle()
    cluster.advance_time(30)
    assert _EmitAckRecorder.log == [("ack", "m1", True)]


def test_p6_no_msg_id_is_never_acked_nor_failed(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("field1"))
    builder = TopologyBuilder()
    builder.set_spout("1", feeder)
    builder.set_bolt("2", Ack()).shuffle_grouping("1")
    builder.set_bolt("3", Forget()).shuffle_grouping("1")
    c = Config()
    c.set_message_timeout_secs(10)
    cluster.submit_topology("no-msg-id", c, builder.create_topology(), capture=True)
    feeder.feed_no_ack(["a"])
    cluster.wait_until_idle()
    cluster.advance_time(35)
    assert cluster.captured("no-msg-id", "1") == [["a"]]
    assert feeder.acked == [] and feeder.failed == []


def test_p7_explicit_fail_before_timeout_and_later_acks_ignored(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("field1"))
    builder = TopologyBuilder()
    builder.set_spout("1", feeder)
    builder.set_bolt("ok", Identity(("field1",))).shuffle_grouping("1")
    builder.set_bolt("ok2", Ack()).shuffle_grouping("ok")
    builder.set_bolt("bad", Fail()).shuffle_grouping("1")
    c = Config()
    c.set_message_timeout_secs(10)
    cluster.submit_topology("explicit-fail", c, builder.create_topology())
    feeder.feed(["a"], 1)
    cluster.wait_until_idle()  # no time passes: this is not a timeout
    assert feeder.failed == [1]
    reason = feeder.fail_reasons[0]
    assert (reason.kind, reason.component) == ("explicit", "bad")
    cluster.advance_time(40)
    assert feeder.failed == [1] and feeder.acked == []


def test_p8_basic_bolt(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("word"))
    builder = TopologyBuilder()
    builder.set_spout("1", feeder)
    builder.set_bolt("2", MaybeFailBasic()).shuffle_grouping("1")
    builder.set_bolt("3", Ack()).shuffle_grouping("2")
    cluster.submit_topology("basic", Config(), builder.create_topology())
    feeder.feed(["ok"], 1)
    feeder.feed(["fail"], 2)
    cluster.wait_until_idle()
    assert feeder.acked == [1]
    assert feeder.failed == [2]


def test_p9_max_spout_pending(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("word"))
    builder = TopologyBuilder()
    builder.set_spout("1", feeder)
    builder.set_bolt("2", AckIfAsked()).shuffle_grouping("1")
    c = Config()
    c.set_max_spout_pending(1)
    c.set_message_timeout_secs(10)
    cluster.submit_topology("pending", c, builder.create_topology())
    for i, word in enumerate(["forget", "ack", "fail", "ack"], start=1):
        feeder.feed([word], i)
    cluster.wait_until_idle()
    calls = feeder.next_tuple_calls
    cluster.wait_until_idle()
    cluster.wait_until_idle()
    assert feeder.next_tuple_calls == calls  # one pending: next_tuple is not called
    assert feeder.acked == [] and feeder.failed == []
    cluster.advance_time(21)  # the first times out; then 2 acks, 3 fails, 4 acks
    assert feeder.failed == [1, 3]
    assert feeder.acked == [2, 4]
    assert [r.kind for r in feeder.fail_reasons] == ["timeout", "explicit"]


def test_p10_ticks(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("word"))
    builder = TopologyBuilder()
    builder.set_spout("1", feeder)
    builder.set_bolt("2", TickCounter()).shuffle_grouping("1").add_configuration(
        Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 30
    )
    cluster.submit_topology("ticks", Config(), builder.create_topology(), capture=True)
    for expected in range(1, 4):
        cluster.advance_time(30)
        assert cluster.captured("ticks", "2") == [[n] for n in range(1, expected + 1)]
    assert feeder.acked == [] and feeder.failed == []


def test_bolt_that_raises_fails_the_tree_and_keeps_running(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("word"))
    builder = TopologyBuilder()
    builder.set_spout("1", feeder)
    builder.set_bolt("boomer", Raiser()).shuffle_grouping("1")
    cluster.submit_topology("raise", Config(), builder.create_topology())
    feeder.feed(["boom"], 1)
    feeder.feed(["fine"], 2)
    cluster.wait_until_idle()
    assert feeder.failed == [1] and feeder.acked == [2]
    reason = feeder.fail_reasons[0]
    assert reason.kind == "error" and "boom in execute" in reason.error
    errors = cluster.errors("raise")
    assert [(e.component, "boom in execute" in e.message) for e in errors] == [("boomer", True)]


def test_kill_fails_pending_with_shutdown(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("word"))
    builder = TopologyBuilder()
    builder.set_spout("1", feeder)
    builder.set_bolt("2", AckIfAsked()).shuffle_grouping("1")
    cluster.submit_topology("kill", Config(), builder.create_topology())
    feeder.feed(["forget"], 1)
    feeder.feed(["ack"], 2)
    cluster.wait_until_idle()
    cluster.kill_topology("kill")
    assert feeder.acked == [2] and feeder.failed == [1]
    assert feeder.fail_reasons[0].kind == "shutdown"


def test_inactive_submit_and_activate(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("word"))
    builder = TopologyBuilder()
    builder.set_spout("1", feeder)
    builder.set_bolt("2", Ack()).shuffle_grouping("1")
    cluster.submit_topology("inactive", Config(), builder.create_topology(), active=False)
    feeder.feed(["a"], 1)
    cluster.wait_until_idle()
    assert feeder.next_tuple_calls == 0 and feeder.acked == []
    cluster.activate("inactive")
    cluster.wait_until_idle()
    assert feeder.acked == [1]
    cluster.deactivate("inactive")
    feeder.feed(["b"], 2)
    cluster.wait_until_idle()
    assert feeder.acked == [1]
    cluster.activate("inactive")
    cluster.wait_until_idle()
    assert feeder.acked == [1, 2]


def test_reset_timeout_keeps_a_tree_alive(engine, cluster_factory):
    from tests.scenarios.bolts_extra import ResetThenAckOnTick

    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("word"))
    builder = TopologyBuilder()
    builder.set_spout("1", feeder)
    builder.set_bolt("2", ResetThenAckOnTick(ack_after=4)).shuffle_grouping("1").add_configuration(
        Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 5
    )
    c = Config()
    c.set_message_timeout_secs(10)
    cluster.submit_topology("reset", c, builder.create_topology())
    feeder.feed(["slow"], 1)
    cluster.advance_time(19)  # without resets it would time out in (10, 20]
    assert feeder.failed == [] and feeder.acked == []
    cluster.advance_time(6)  # the 4th tick acks it, 20 s after emit
    assert feeder.acked == [1] and feeder.failed == []


class _OneArgFailSpout(OneShotSpout):
    """Storm's signature: fail(msg_id), no reason."""

    failed: ClassVar[list] = []

    def fail(self, msg_id):
        _OneArgFailSpout.failed.append(msg_id)


@SPOUTS_IN_THIS_PROCESS
def test_spout_with_one_argument_fail_still_gets_its_failures(engine, cluster_factory):
    cluster = cluster_factory(engine)
    _OneArgFailSpout.failed = []
    builder = TopologyBuilder()
    builder.set_spout("1", _OneArgFailSpout(["x"], "m1", Fields("field1")))
    builder.set_bolt("2", Fail()).shuffle_grouping("1")
    cluster.submit_topology("one-arg", Config(), builder.create_topology())
    cluster.wait_until_idle()
    assert _OneArgFailSpout.failed == ["m1"]
    assert cluster.errors("one-arg") == []


class _ReplayInFailSpout(OneShotSpout):
    """Replays a failed message from inside ``fail`` (a common Storm spout pattern)."""

    events: ClassVar[list] = []

    def ack(self, msg_id):
        _ReplayInFailSpout.events.append(("ack", msg_id))

    def fail(self, msg_id, reason=None):
        _ReplayInFailSpout.events.append(("fail", msg_id))
        self.collector.emit(["ok"], msg_id + 1)  # the replay, under a new id


@SPOUTS_IN_THIS_PROCESS
def test_emits_from_inside_spout_fail_are_delivered(engine, cluster_factory):
    cluster = cluster_factory(engine)
    _ReplayInFailSpout.events = []
    builder = TopologyBuilder()
    builder.set_spout("1", _ReplayInFailSpout(["fail"], 1, Fields("word")))
    builder.set_bolt("2", MaybeFailBasic()).shuffle_grouping("1")
    c = Config()
    c.set_message_timeout_secs(10)
    cluster.submit_topology("replay-in-fail", c, builder.create_topology())
    cluster.wait_until_idle()
    # MaybeFailBasic fails "fail" and passes "ok": the replay emitted in fail() must arrive
    assert _ReplayInFailSpout.events == [("fail", 1), ("ack", 2)]
    assert cluster.errors("replay-in-fail") == []


def test_a_cycle_runs_to_its_end_and_acks(engine, cluster_factory):
    """A bolt subscribed to itself: its loop stays in one worker, which runs at most 4 hops
    of it per superstep and carries on in the next."""
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("n"))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("down", Countdown()).global_grouping("in").global_grouping("down")
    c = Config()
    c[Config.SPARKSTORM_SPARK_PARTITIONS] = 1
    c[Config.SPARKSTORM_SUPERSTEP_HOPS] = 4
    cluster.submit_topology("cycle", c, builder.create_topology(), capture=True)
    feeder.feed([40], "m")
    cluster.wait_until_idle()
    assert feeder.acked == ["m"] and feeder.failed == []
    assert cluster.captured("cycle", "down", "done") == [[41]]
