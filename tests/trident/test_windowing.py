"""Trident's windows: Storm's ``TridentWindowingTest``, and windows run as a user would.

Count and duration windows, tumbling and sliding, over a fed stream; every window's
aggregate exactly once through a failed batch; the windows store of each kind.
"""

from __future__ import annotations

import time

import pytest
import redis

from sparkstorm import Duration, Fields
from sparkstorm.trident import (
    BaseFunction,
    Count,
    FeederBatchSpout,
    InMemoryWindowsStoreFactory,
    RedisWindowsStoreFactory,
    SlidingCountWindow,
    SlidingDurationWindow,
    Sum,
    TridentTopology,
    TumblingCountWindow,
    TumblingDurationWindow,
)
from sparkstorm.trident.windowing import Windows, advance
from tests.conftest import REDIS_URL
from tests.trident.ops import CountAsAggregator, FailOnceOn, Split


# -- Storm's TridentWindowingTest ----------------------------------------------------
def test_window_configs_have_storms_lengths():
    assert TumblingCountWindow.of(9).get_window_length() == 9
    assert TumblingCountWindow.of(9).get_sliding_length() == 9
    sliding = SlidingCountWindow.of(10, 2)
    assert (sliding.get_window_length(), sliding.get_sliding_length()) == (10, 2)
    tumbling = TumblingDurationWindow.of(Duration.seconds(20))
    assert (tumbling.get_window_length(), tumbling.get_sliding_length()) == (20_000, 20_000)
    by_time = SlidingDurationWindow.of(Duration.seconds(50), Duration.seconds(10))
    assert (by_time.get_window_length(), by_time.get_sliding_length()) == (50_000, 10_000)


def test_a_window_that_slides_past_its_length_is_refused():
    with pytest.raises(ValueError, match="slides by 5 tuples, more than its length 3"):
        SlidingCountWindow.of(3, 5)
    with pytest.raises(ValueError, match="a window length of 0 tuples"):
        TumblingCountWindow.of(0)


@pytest.mark.services
@pytest.mark.parametrize(
    "factory", [InMemoryWindowsStoreFactory(), RedisWindowsStoreFactory(REDIS_URL, "unit")]
)
def test_windows_stores_put_get_and_remove(factory, redis_prefix):
    store = factory.create({})
    for i in range(10):
        store.put(f"{redis_prefix}:key{i}", f"value{i}")
    assert [store.get(f"{redis_prefix}:key{i}") for i in range(10)] == [
        f"value{i}" for i in range(10)
    ]
    store.remove(f"{redis_prefix}:key1")
    assert store.get(f"{redis_prefix}:key1") is None
    for i in range(10):
        store.remove(f"{redis_prefix}:key{i}")
    store.shutdown()


# -- how a batch moves the windows (pure) -------------------------------------------
def test_count_windows_end_every_slide_tuples_over_the_last_length():
    rows = [[i] for i in range(1, 8)]
    _, tumbled = advance(TumblingCountWindow.of(3), Windows(), rows, 0.0)
    assert tumbled == [[[1], [2], [3]], [[4], [5], [6]]]
    _, slid = advance(SlidingCountWindow.of(4, 2), Windows(), rows, 0.0)
    assert slid == [[[1], [2]], [[1], [2], [3], [4]], [[3], [4], [5], [6]]]


def test_a_window_is_the_same_whether_its_tuples_came_in_one_batch_or_several():
    config, rows = SlidingCountWindow.of(4, 3), [[i] for i in range(10)]
    _, whole = advance(config, Windows(), rows, 0.0)
    windows, pieces = Windows(), []
    for part in (rows[:2], rows[2:7], rows[7:]):
        windows, ended = advance(config, windows, part, 0.0)
        pieces += ended
    assert pieces == whole


def test_duration_windows_end_on_the_batches_time_and_skip_empty_ones():
    config = SlidingDurationWindow.of(Duration(4), Duration(2))
    windows, ended = advance(config, Windows(), [["a"]], 10.0)  # the first ends at 12
    assert ended == []
    windows, ended = advance(config, windows, [["b"]], 11.0)
    assert ended == []
    windows, ended = advance(config, windows, [["c"]], 13.0)  # [8, 12): a, b
    assert ended == [[["a"], ["b"]]]
    windows, ended = advance(config, windows, [], 21.0)  # [10,14), [12,16); 16 and on: empty
    assert ended == [[["a"], ["b"], ["c"]], [["c"]]]


# -- windows as a topology runs them ------------------------------------------------
def windowed(spout, config, factory, capture="windows"):
    topology = TridentTopology()
    (
        topology.new_stream("feeder", spout)
        .each(Fields("sentence"), Split(), Fields("word"))
        .global_()
        .window(config, factory, Fields("word"), CountAsAggregator(), Fields("count"))
        .name(capture)
    )
    return topology


@pytest.mark.parametrize("engine", ["local", "continuous"])
def test_a_tumbling_count_window_counts_every_n_words(engine, cluster_factory):
    feeder = FeederBatchSpout(["sentence"])
    topology = windowed(feeder, TumblingCountWindow.of(4), InMemoryWindowsStoreFactory())
    cluster = cluster_factory(engine)
    cluster.submit_topology("tumbling", {}, topology.build(), capture=True)
    feeder.feed([["the cow jumped"], ["over the"]])  # 5 words: one window of 4
    feeder.feed([["moon and back"]])  # 8 words: a second
    feeder.feed([["again"]])  # 9: nothing yet
    cluster.wait_until_idle()
    assert cluster.captured("tumbling", "windows", "windows") == [[4], [4]]


class Number(BaseFunction):
    def execute(self, tup, collector):
        collector.emit([int(tup[0])])


def test_every_window_is_aggregated_once_through_a_failed_commit(cluster_factory, tmp_path):
    """The commit of batch 3 fails once after its windows moved on (an operation after
    the window fails): its replay moves them on again from where they were before it."""
    feeder = FeederBatchSpout(["sentence"])
    topology = TridentTopology()
    (
        topology.new_stream("feeder", feeder)
        .each(Fields("sentence"), Split(), Fields("word"))
        .each(Fields("word"), Number(), Fields("n"))
        .global_()
        .sliding_window(4, 2, InMemoryWindowsStoreFactory(), Fields("n"), Sum(), Fields("sum"))
        .each(Fields("sum"), FailOnceOn(34, str(tmp_path / "failed")), Fields("checked"))
        .project(Fields("checked"))
        .name("sums")
    )
    cluster = cluster_factory("local")
    conf = {"topology.max.spout.pending": 3}
    cluster.submit_topology("replayed", conf, topology.build(), capture=True)
    for part in ("1 2 3", "4 5 6 7", "8 9 10"):
        feeder.feed([[part]])
    assert (tmp_path / "failed").exists()
    assert cluster.captured("replayed", "sums", "sums") == [[3], [10], [18], [26], [34]]


@pytest.mark.services
def test_windows_kept_in_redis_go_on_in_a_new_cluster(cluster_factory, redis_prefix):
    """The windows, like the progress, are in Redis: a second cluster (a restart) goes on
    from the tuples the first one's windows held."""
    factory = RedisWindowsStoreFactory(REDIS_URL, redis_prefix)
    conf = {
        "topology.state.provider": "redis",
        "topology.state.provider.config": {"url": REDIS_URL, "key_prefix": redis_prefix},
    }
    seen = []
    for sentences in (["a b"], ["c d e f"]):
        feeder = FeederBatchSpout(["sentence"])
        topology = windowed(feeder, TumblingCountWindow.of(3), factory)
        cluster = cluster_factory("local")
        cluster.submit_topology("restarted", conf, topology.build(), capture=True)
        feeder.feed([[s] for s in sentences])
        seen += cluster.captured("restarted", "windows", "windows")
        cluster.shutdown()
    client = redis.Redis.from_url(REDIS_URL)
    client.delete(*client.keys(f"sparkstorm:trident:{redis_prefix}:*"))
    assert seen == [[3], [3]]  # a b c | d e f: the first cluster's a b were kept


def test_a_tumbling_duration_window_ends_as_time_passes_without_tuples(cluster_factory):
    feeder = FeederBatchSpout(["sentence"])
    config = TumblingDurationWindow.of(Duration(5))
    topology = windowed(feeder, config, InMemoryWindowsStoreFactory())
    cluster = cluster_factory("local")  # simulated time: it moves only when told
    cluster.submit_topology("by-time", {}, topology.build(), capture=True)
    feeder.feed([["a b c"]])  # at 0: the window ends at 5
    cluster.advance_time(3)
    feeder.feed([["d e"]])  # at 3
    assert cluster.captured("by-time", "windows", "windows") == []
    cluster.advance_time(3)  # at 6: empty batches carry the time to the window
    _until(lambda: cluster.captured("by-time", "windows", "windows") == [[5]], cluster)


def _until(condition, cluster, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the window did not end"
        cluster.wait_until_idle()
        time.sleep(0.02)


def test_a_window_of_a_drpc_stream_is_refused():
    topology = TridentTopology()
    (
        topology.new_drpc_stream("words")
        .each(Fields("args"), Split(), Fields("word"))
        .tumbling_window(3, InMemoryWindowsStoreFactory(), Fields("word"), Count(), Fields("n"))
    )
    from sparkstorm import InvalidTopologyError

    with pytest.raises(InvalidTopologyError, match="windows a stream of DRPC function 'words'"):
        topology.build()
