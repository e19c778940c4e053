"""Windowed bolts on every engine and mode: what each window holds, when inputs are acked, and
Storm's checks. Time is simulated: a duration window fires on the bolt's ticks. Each
scenario runs a tuple windowed bolt and a windowed Arrow bolt (``kind``): the same
windows, the same acks, rows for tuples."""

from __future__ import annotations

import pytest

from sparkstorm import (
    Config,
    Count,
    Duration,
    Fields,
    InvalidTopologyError,
    TopologyBuilder,
)
from sparkstorm.testing import FeederSpout
from tests.scenarios.bolts import Ack
from tests.scenarios.windows import (
    ArrowEcho,
    ArrowRaises,
    ArrowRecorder,
    HoldOne,
    Raises,
    Recorder,
)
from tests.state.topology import StatefulCount


@pytest.fixture(params=["tuples", "columns"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


def recorder(kind: str):
    return ArrowRecorder() if kind == "columns" else Recorder()


def raises(kind: str):
    return ArrowRaises() if kind == "columns" else Raises()


def submit(cluster, bolt, conf=None, fields=("x",), downstream=Ack):
    feeder = FeederSpout(Fields(*fields))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("window", bolt).global_grouping("in")
    builder.set_bolt("out", downstream()).shuffle_grouping("window")
    cluster.submit_topology("w", Config(conf or {}), builder.create_topology(), capture=True)
    return feeder


def windows(cluster):
    return cluster.captured("w", "window")


def test_a_tumbling_count_window_fires_every_n_and_acks_each_tuple_after_its_window(
    cluster_factory, engine, kind
):
    cluster = cluster_factory(engine)
    feeder = submit(cluster, recorder(kind).with_tumbling_window(Count(3)))
    for i in range(7):
        feeder.feed([i], i)
    cluster.wait_until_idle()
    assert [w[:3] for w in windows(cluster)] == [
        [[0, 1, 2], [0, 1, 2], []],
        [[3, 4, 5], [3, 4, 5], [0, 1, 2]],
    ]
    assert sorted(feeder.acked) == [0, 1, 2, 3, 4, 5]  # 6 waits in the next window


def test_a_sliding_count_window_keeps_what_the_next_window_holds(cluster_factory, engine, kind):
    cluster = cluster_factory(engine)
    restored = {Config.SPARKSTORM_SPARK_RESIDENT: False}  # Spark: the window travels in snapshots
    feeder = submit(cluster, recorder(kind).with_window(Count(4), Count(2)), restored)
    for i in range(6):
        feeder.feed([i], i)
    cluster.wait_until_idle()
    assert [w[:3] for w in windows(cluster)] == [
        [[0, 1], [0, 1], []],
        [[0, 1, 2, 3], [2, 3], []],
        [[2, 3, 4, 5], [4, 5], [0, 1]],
    ]
    # the next window is 4, 5 and two more: 0 to 3 left every window they can be in
    assert sorted(feeder.acked) == [0, 1, 2, 3]


def test_a_sliding_duration_window_fires_on_ticks_by_arrival_time(cluster_factory, engine, kind):
    cluster = cluster_factory(engine)
    feeder = submit(cluster, recorder(kind).with_window(Duration(4), Duration(2)))
    feeder.feed(["a"], "a")
    cluster.wait_until_idle()
    cluster.advance_time(1)
    feeder.feed(["b"], "b")
    cluster.wait_until_idle()
    cluster.advance_time(1)  # t=2: first tick
    cluster.advance_time(2)  # t=4
    feeder.feed(["c"], "c")
    cluster.wait_until_idle()
    cluster.advance_time(2)  # t=6
    got = [(w[0], w[1], w[2], w[3]) for w in windows(cluster)]
    assert got == [  # windows are (end - 4, end]
        (["a", "b"], ["a", "b"], [], 2),
        (["b"], [], ["a"], 4),
        (["c"], ["c"], ["b"], 6),
    ]
    assert sorted(feeder.acked) == ["a", "b", "c"]  # the next window, (4, 8], starts after c


def test_emits_are_anchored_to_the_window_so_a_failure_downstream_replays_all(
    cluster_factory, engine, kind
):
    cluster = cluster_factory(engine)
    conf = {Config.TOPOLOGY_MESSAGE_TIMEOUT_SECS: 10}
    feeder = submit(
        cluster, recorder(kind).with_tumbling_window(Count(2)), conf, downstream=HoldOne
    )
    feeder.feed(["hold"], "h")
    feeder.feed(["x"], "x")  # its window's emit is held downstream, never acked
    feeder.feed(["y"], "y")
    feeder.feed(["z"], "z")  # a window whose emit is acked
    cluster.wait_until_idle()
    assert sorted(feeder.acked) == ["y", "z"]
    cluster.advance_time(21)
    assert sorted(feeder.failed) == ["h", "x"]  # both trees held the unacked emit


def test_rows_anchored_one_by_one_fail_alone_downstream(cluster_factory, engine):
    """``emit_batch(batch, anchors=rows)``: each output row in its own input row's tree."""
    cluster = cluster_factory(engine)
    conf = {Config.TOPOLOGY_MESSAGE_TIMEOUT_SECS: 10}
    feeder = submit(cluster, ArrowEcho().with_tumbling_window(Count(2)), conf, downstream=HoldOne)
    for value in ["hold", "x", "y", "z"]:
        feeder.feed([value], value)
    cluster.wait_until_idle()
    assert sorted(feeder.acked) == ["x", "y", "z"]  # x shared the window, not the tree
    cluster.advance_time(21)
    assert feeder.failed == ["hold"]


def test_an_exception_in_execute_fails_that_windows_tuples_only(cluster_factory, engine, kind):
    cluster = cluster_factory(engine)
    feeder = submit(cluster, raises(kind).with_tumbling_window(Count(2)))
    for value in ["a", "bad", "c", "d"]:
        feeder.feed([value], value)
    cluster.wait_until_idle()
    assert sorted(feeder.failed) == ["a", "bad"] and sorted(feeder.acked) == ["c", "d"]
    assert windows(cluster) == [[["c", "d"]]]
    assert "a bad window" in cluster.errors("w")[0].message


def test_event_time_windows_fire_on_the_watermark_and_late_tuples_go_to_their_stream(
    cluster_factory, engine, kind
):
    cluster = cluster_factory(engine)
    bolt = (
        recorder(kind)
        .with_window(Duration(20), Duration(10))
        .with_timestamp_field("ts")
        .with_lag(Duration(5))
        .with_late_tuple_stream("late")
    )
    conf = {Config.TOPOLOGY_MESSAGE_TIMEOUT_SECS: 60}
    feeder = submit(cluster, bolt, conf, fields=("x", "ts"))
    # Storm's documented example: events at 6:00:03, :05, :07, :18, :26, :36 (here 3..36)
    for ts in [3, 5, 7, 18, 26, 36]:
        feeder.feed([f"e{ts}", ts], ts)
    cluster.wait_until_idle()
    cluster.advance_time(1)  # a watermark: 36 - 5 = 31
    got = [(w[0], w[3]) for w in windows(cluster)]
    assert got == [
        (["e3", "e5", "e7"], 10),
        (["e3", "e5", "e7", "e18"], 20),
        (["e18", "e26"], 30),
    ]
    assert sorted(feeder.acked) == [3, 5, 7, 18]  # 26 and 36 wait for the window (20, 40]
    feeder.feed(["e25", 25], 25)  # older than the watermark: late
    cluster.wait_until_idle()
    late = cluster.captured("w", "window", "late")  # a late tuple, or a late row's values
    assert [t[0].values if kind == "tuples" else t for t in late] == [["e25", 25]]
    assert 25 in feeder.acked
    assert cluster.stats("w")["window"]["late_tuples"] == 1


def feed_event_times(cluster, bolt, times):
    """Feed events ``e<ts>`` with timestamps ``times``, then give the watermark a tick."""
    conf = {Config.TOPOLOGY_MESSAGE_TIMEOUT_SECS: 60}
    feeder = submit(cluster, bolt.with_timestamp_field("ts"), conf, fields=("x", "ts"))
    for ts in times:
        feeder.feed([f"e{ts}", ts], ts)
    cluster.wait_until_idle()
    cluster.advance_time(1)
    return feeder, [(w[0], w[3]) for w in windows(cluster)]


def test_count_windows_on_event_time_take_events_in_timestamp_order(cluster_factory, engine, kind):
    """Storm's watermark count trigger: every 3 events the watermark passed, by timestamp."""
    cluster = cluster_factory(engine)
    bolt = recorder(kind).with_tumbling_window(Count(3)).with_lag(Duration(5))
    feeder, got = feed_event_times(cluster, bolt, [3, 1, 2, 10, 7, 8, 20, 30])
    # watermark 30 - 5 = 25: events 1..20 passed it, in timestamp order; 30 has not
    assert got == [(["e1", "e2", "e3"], 3), (["e7", "e8", "e10"], 10)]
    assert sorted(feeder.acked) == [1, 2, 3, 7, 8, 10]  # 20 waits for two more events


def test_a_count_window_on_event_time_can_slide_by_a_duration(cluster_factory, kind):
    cluster = cluster_factory("local")
    bolt = recorder(kind).with_window(Count(2), Duration(10))
    feeder, got = feed_event_times(cluster, bolt, [1, 4, 6, 12, 25])
    # at each multiple of 10 after new events, up to the watermark (25): the last 2 events
    assert got == [(["e4", "e6"], 10), (["e6", "e12"], 20)]
    assert sorted(feeder.acked) == [1, 4]


def test_a_duration_window_on_event_time_can_slide_by_a_count(cluster_factory, kind):
    cluster = cluster_factory("local")
    bolt = recorder(kind).with_window(Duration(10), Count(2))
    feeder, got = feed_event_times(cluster, bolt, [1, 4, 6, 15, 30])
    # every 2nd event ends a window: the events within 10 s before it
    assert got == [(["e1", "e4"], 4), (["e6", "e15"], 15)]
    assert sorted(feeder.acked) == [1, 4]


def test_storms_checks_name_the_bolt_and_what_to_change(cluster_factory):
    cluster = cluster_factory("local")
    with pytest.raises(InvalidTopologyError, match=r"'window'.*topology.message.timeout.secs"):
        submit(cluster, Recorder().with_window(Duration(20), Duration(15)))  # timeout 30
    with pytest.raises(InvalidTopologyError, match=r"'window'.*max.spout.pending"):
        submit(
            cluster,
            Recorder().with_window(Count(10), Count(5)),
            {Config.TOPOLOGY_MAX_SPOUT_PENDING: 12},
        )
    with pytest.raises(InvalidTopologyError, match=r"'window' has no window"):
        submit(cluster, Recorder())
    with pytest.raises(InvalidTopologyError, match=r"late-tuple stream 'gone' is not declared"):
        submit(cluster, Recorder().with_tumbling_window(Count(2)).with_late_tuple_stream("gone"))
    plain = r"'window': a plain windowed bolt cannot run.*StatefulWindowedBolt"
    with pytest.raises(InvalidTopologyError, match=plain):
        builder = TopologyBuilder()
        builder.set_spout("in", FeederSpout(Fields("word")))
        builder.set_bolt("window", Recorder().with_tumbling_window(Count(2))).shuffle_grouping("in")
        builder.set_bolt("count", StatefulCount()).shuffle_grouping("in")
        cluster.submit_topology("s", Config(), builder.create_topology())
    with pytest.raises(ValueError, match=r"Count\(n\) or Duration"):
        Recorder().with_tumbling_window(5)


def test_a_stop_fails_what_windows_hold_at_once_not_after_the_message_timeout(
    engine, request, kind
):
    """A sliding window always holds tuples for the next one: a stop must not wait for it."""
    import time

    from tests.conftest import run_on
    from tests.state.topology import ReplayingSpout, sentences

    spark = request.getfixturevalue("spark") if engine != "local" else None
    builder = TopologyBuilder()
    builder.set_spout("in", ReplayingSpout(sentences(40)))
    builder.set_bolt("window", raises(kind).with_window(Count(4), Count(2))).global_grouping("in")
    conf = {Config.TOPOLOGY_MESSAGE_TIMEOUT_SECS: 60}
    started = time.monotonic()
    result = run_on(engine, builder.create_topology(), conf, spark, duration=2, until_idle=False)
    assert time.monotonic() - started < 40  # the drain used to last the 60 s timeout
    spout = result.stats["in"]
    assert spout["acked"] == 38 and spout["fail_reasons"] == {"shutdown": 2}
