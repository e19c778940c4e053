"""The samples behind the page's plots and Storm UI's windows."""

from __future__ import annotations

import numpy as np
import pytest

from sparkstorm.control.history import History
from sparkstorm.tasks.metrics import TaskStats, by_component

START = 1_000_000.0


class Clocked:
    """One spout task and one bolt task, advanced second by second."""

    def __init__(self):
        self.spout = TaskStats("numbers", 1)
        self.bolt = TaskStats("ack", 2)
        self.history = History(START)

    def second(self, t, acked, failed=0, latency=0.010, reason="timeout"):
        self.spout.emitted += acked + failed
        self.spout.acked += acked
        self.spout.failed += failed
        if failed:
            self.spout.fail_reasons[reason] = self.spout.fail_reasons.get(reason, 0) + failed
        self.spout.complete_latencies += [latency] * acked
        self.bolt.executed += acked
        self.bolt.execute_secs += 0.001 * acked
        stats = by_component([self.spout, self.bolt], superstep_secs=t)
        stats["numbers"]["kind"], stats["ack"]["kind"] = "spout", "bolt"
        self.history.record(START + t, stats, [self.spout])


def test_a_window_counts_what_happened_in_it_and_all_time_counts_everything():
    run = Clocked()
    for t in range(1, 21):  # 20 s: 100 acked/s at 10 ms, then 300/s at 50 ms from t=11
        run.second(t, 100 if t <= 10 else 300, latency=0.010 if t <= 10 else 0.050)
    last_five = run.history.window(5)
    assert last_five["numbers"]["acked"] == 5 * 300
    assert last_five["numbers"]["completeLatency"] == pytest.approx(50.0)
    assert last_five["numbers"]["completeLatencyP50"] == pytest.approx(50.0, rel=0.02)
    assert last_five["ack"]["executed"] == 5 * 300
    assert last_five["ack"]["executeLatency"] == pytest.approx(1.0)
    longer = run.history.window(600)  # a window longer than the run: all of it
    assert longer["numbers"]["acked"] == 10 * 100 + 10 * 300
    latencies = [10.0] * 1000 + [50.0] * 3000
    assert longer["numbers"]["completeLatencyP50"] == pytest.approx(
        np.percentile(latencies, 50), rel=0.02
    )
    assert longer["numbers"]["completeLatencyP99"] == pytest.approx(50.0, rel=0.02)


def test_samples_are_at_most_one_a_second():
    run = Clocked()
    run.second(1, 10)
    run.history.record(START + 1.5, {}, [])  # too soon: ignored
    assert len(run.history.fine) == 2  # the start and t=1


def test_the_series_gives_rates_latencies_and_failures_by_reason_per_second():
    run = Clocked()
    for t in range(1, 6):
        run.second(t, 200, failed=t, latency=0.020)
    series = run.history.series(600)
    assert series["time"] == [START + t for t in range(1, 6)]
    numbers = series["components"]["numbers"]
    assert numbers["acked"] == [200.0] * 5
    assert numbers["failed"] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert numbers["p99"] == [pytest.approx(20.0, rel=0.02)] * 5
    assert series["failReasons"] == {"timeout": [1.0, 2.0, 3.0, 4.0, 5.0]}
    assert series["components"]["ack"] == {
        "kind": "bolt",
        "executed": [200.0] * 5,
        "failed": [0.0] * 5,
    }


def test_a_second_without_completed_trees_has_no_latency_point():
    run = Clocked()
    run.second(1, 10)
    run.second(2, 0)
    assert run.history.series(600)["components"]["numbers"]["p50"][1] is None


def test_after_ten_minutes_the_day_window_reads_the_minute_samples():
    run = Clocked()
    for t in range(1, 1201):  # 20 minutes, 10 acked/s
        run.second(t, 10)
    assert len(run.history.fine) == 601  # the last 10 minutes only
    assert run.history.window(10800)["numbers"]["acked"] == 1200 * 10
    assert run.history.window(600)["numbers"]["acked"] == 600 * 10
    series = run.history.series(10800)
    assert len(series["time"]) == 20  # one point a minute
    assert series["components"]["numbers"]["acked"] == [10.0] * 20


def test_a_component_first_seen_later_counts_from_zero_before():
    run = Clocked()
    run.history.record(START + 1, {}, [])  # on Spark, bolts report after their first job
    run.second(2, 50)
    series = run.history.series(600)
    assert series["components"]["ack"]["executed"] == [0.0, 50.0]
    assert run.history.window(600)["ack"]["executed"] == 50
