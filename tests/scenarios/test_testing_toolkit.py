"""Storm's testing toolkit (sparkstorm.testing), as Storm's own tests use it, on every engine."""

from __future__ import annotations

import time

import pytest

from sparkstorm import (
    BasicBolt,
    Bolt,
    Config,
    Fields,
    InvalidTopologyError,
    Time,
    TopologyBuilder,
)
from sparkstorm.testing import (
    FeederSpout,
    FixedTupleSpout,
    IdentityBolt,
    MockedSources,
    RecordingCollector,
    TestAggregatesCounter,
    TestGlobalCount,
    TestWordCounter,
    TestWordSpout,
    TrackedTopology,
    complete_topology,
    prepared,
    test_tuple,
)


def on(engine, spark):
    """complete_topology's engine options for a test's engine."""
    if engine == "local":
        return {"engine": "local"}
    mode = "superstep" if engine == "spark" else engine
    return {"engine": "spark", "spark": spark, "mode": mode}


def word_count_topology():
    """Storm's TestingTest: words -> counter (fields) -> global count, aggregates."""
    builder = TopologyBuilder()
    builder.set_spout("1", TestWordSpout(), 3)
    builder.set_bolt("2", TestWordCounter(), 4).fields_grouping("1", Fields("word"))
    builder.set_bolt("3", TestGlobalCount()).global_grouping("1")
    builder.set_bolt("4", TestAggregatesCounter()).global_grouping("2")
    return builder.create_topology()


def test_complete_topology_with_mocked_sources_as_storm_s_testing_test(engine, spark):
    mocked = MockedSources().add_mock_data("1", ["nathan"], ["bob"], ["joey"], ["nathan"])
    conf = Config()
    conf.set_num_ackers(2)
    results = complete_topology(word_count_topology(), mocked, conf, **on(engine, spark))
    assert sorted(results.read_tuples("1")) == [["bob"], ["joey"], ["nathan"], ["nathan"]]
    assert sorted(results.read_tuples("2")) == [
        ["bob", 1],
        ["joey", 1],
        ["nathan", 1],
        ["nathan", 2],
    ]
    assert sorted(results.read_tuples("3")) == [[1], [2], [3], [4]]
    assert len(results.read_tuples("4")) == 4 and max(results.read_tuples("4")) == [4]
    assert results.result.stats["1"]["acked"] == 4


def test_a_bolt_may_subscribe_to_the_system_stream_as_in_storm_s_test_system_stream(engine, spark):
    builder = TopologyBuilder()
    builder.set_spout("1", TestWordSpout(), 3)
    declarer = builder.set_bolt("2", IdentityBolt(Fields("word")))
    declarer.fields_grouping("1", Fields("word")).global_grouping("1", "__system")
    mocked = MockedSources().add_mock_data("1", ["a"], ["b"], ["c"])
    results = complete_topology(builder.create_topology(), mocked, **on(engine, spark))
    assert sorted(results.read_tuples("2")) == [["a"], ["b"], ["c"]]
    with pytest.raises(InvalidTopologyError, match=r"stream '__systme' of '1', which '1'"):
        builder.set_bolt("3", IdentityBolt(Fields("word"))).global_grouping("1", "__systme")
        builder.create_topology()


class Clock(Bolt):
    """Emits the time its task reads at each tick (every 2 s)."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup.is_tick():
            self.collector.emit([Time.current_time_secs(), Time.is_simulating()])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("now", "simulating"))

    def get_component_configuration(self):
        return {"topology.tick.tuple.freq.secs": 2}


def test_components_read_the_simulated_time_wherever_their_task_runs(engine, cluster_factory):
    cluster = cluster_factory(engine)
    builder = TopologyBuilder()
    builder.set_spout("words", FeederSpout(Fields("word")))
    builder.set_bolt("clock", Clock(), 2).shuffle_grouping("words")
    cluster.submit_topology("clock", Config(), builder.create_topology(), capture=True)
    cluster.advance_time(7)
    cluster.wait_until_idle()
    read = cluster.captured("clock", "clock")
    assert len(read) >= 4  # two tasks, ticks at about 2, 4 and 6 simulated seconds
    assert all(simulating for _, simulating in read)
    assert all(0 < now <= 7 for now, _ in read), read  # not the wall clock's 1.7e9
    cluster.shutdown()
    assert not Time.is_simulating()  # the wall clock again, in this process


def test_complete_topology_refuses_a_spout_that_never_ends_and_a_mock_of_a_bolt():
    with pytest.raises(
        InvalidTopologyError, match=r"spout '1' \(TestWordSpout\) is neither mocked"
    ):
        complete_topology(word_count_topology())
    with pytest.raises(InvalidTopologyError, match="mocked source '2' is not a spout"):
        complete_topology(word_count_topology(), MockedSources().add_mock_data("2", ["x"]))


def test_complete_topology_takes_a_completable_spout_of_the_user_s_unmocked():
    """Storm's completeTopology runs any CompletableSpout; the example's spout is one."""
    from examples.word_count import SentenceSpout, SplitSentence

    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(["a b", "c"]), 2)
    builder.set_bolt("split", SplitSentence()).shuffle_grouping("sentences")
    conf = {Config.SPARKSTORM_IDLE_GRACE_SECS: 60}  # only exhaustion can end it in time
    started = time.monotonic()
    results = complete_topology(builder.create_topology(), conf=conf, timeout_secs=30)
    assert time.monotonic() - started < 15, "it ran out its timeout: exhaustion did not end it"
    assert sorted(results.read_tuples("split")) == [["a"], ["b"], ["c"]]
    assert results.result.stats["sentences"]["acked"] == 2


@pytest.mark.parametrize("engine", ["local"])  # (the mocked word count runs on every mode)
def test_a_fixed_tuple_spout_s_tasks_share_its_tuples_each_emitted_once(engine, spark):
    builder = TopologyBuilder()
    tuples = [["a", 1], ["b", 2], ["c", 3], ["d", 4], ["e", 5]]
    builder.set_spout("fixed", FixedTupleSpout(tuples, Fields("letter", "n")), 2)
    builder.set_bolt("same", IdentityBolt(Fields("letter", "n")), 2).shuffle_grouping("fixed")
    results = complete_topology(builder.create_topology(), **on(engine, spark))
    assert sorted(results.read_tuples("fixed")) == tuples
    assert sorted(results.read_tuples("same")) == tuples
    assert results.result.stats["fixed"]["tasks"] == 2


@pytest.mark.parametrize("engine", ["local", "continuous"])  # superstep: the local loop's
def test_tracked_wait_waits_for_the_fed_tuples_and_what_they_caused(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("word"))
    builder = TopologyBuilder()
    builder.set_spout("words", feeder)
    builder.set_bolt("count", TestWordCounter(), 2).fields_grouping("words", Fields("word"))
    builder.set_bolt("total", TestGlobalCount()).global_grouping("count")
    tracked = TrackedTopology(cluster, "tracked", builder.create_topology())
    feeder.feed(["a"], 1)
    feeder.feed(["b"], 2)
    tracked.tracked_wait(2)
    assert sorted(tracked.captured("count")) == [["a", 1], ["b", 1]]
    feeder.feed(["a"], 3)
    tracked.tracked_wait(1)
    assert tracked.captured("total")[-1] == [3]
    assert sorted(feeder.acked) == [1, 2, 3]


class Split(Bolt):
    def prepare(self, conf, context, collector):
        self.collector, self.who = collector, (context.get_this_component_id(), conf.get("my.key"))

    def execute(self, tup):
        if not tup["sentence"]:
            self.collector.fail(tup)
            return
        for word in tup["sentence"].split():
            self.collector.emit([word], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


def test_one_bolt_under_test_with_a_test_tuple_and_a_recording_collector():
    bolt, collector = prepared(Split(), {"my.key": 7}, component="split")
    assert bolt.who == ("split", 7)
    sentence = test_tuple(["the cow"], component="sentences", fields=["sentence"])
    bolt.execute(sentence)
    bolt.execute(test_tuple([""], fields=["sentence"]))
    assert collector.emitted == [("default", ["the"]), ("default", ["cow"])]
    assert [e.anchors for e in collector.emits] == [[sentence], [sentence]]
    assert (collector.acked, collector.failed) == (1, 1)
    default = test_tuple([1, 2])
    assert (default.fields.to_list(), default.source_component) == (
        ["field1", "field2"],
        "component",
    )

    counter, recording = prepared(TestWordCounter())
    counter.execute(test_tuple(["nathan"]), recording)
    counter.execute(test_tuple(["nathan"]), recording)
    assert recording.emitted == [("default", ["nathan", 1]), ("default", ["nathan", 2])]
    assert isinstance(recording, RecordingCollector) and isinstance(counter, BasicBolt)
