"""Complete latencies in 2%-wide buckets: bounded memory, exact mean, percentiles within 2%."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkstorm.tasks.metrics import Latencies, TaskStats, by_component, percentile_ms


@given(st.lists(st.floats(min_value=1e-5, max_value=3600.0), min_size=1, max_size=300))
def test_percentiles_are_within_two_percent_of_the_exact_ones(secs):
    latencies = Latencies()
    latencies.add(secs)
    for q in (0.5, 0.99):
        # the value at the rank the buckets count to (numpy's "inverted_cdf")
        exact = 1000 * float(np.percentile(secs, 100 * q, method="inverted_cdf"))
        assert percentile_ms(latencies.buckets, q) == pytest.approx(exact, rel=0.01)


def test_a_million_trees_keep_a_few_hundred_numbers_and_the_exact_mean():
    rng = np.random.default_rng(7)
    spout = TaskStats("sentences", 1)
    values = rng.lognormal(mean=-3, sigma=1, size=1_000_000)
    for chunk in np.array_split(values, 50):  # as the spout task hands them over
        spout.complete_latencies += chunk.tolist()
        spout.fold()
    assert spout.complete_latencies == []
    assert len(spout.latencies.buckets) < 600
    row = by_component([spout], 1.0)["sentences"]
    assert row["complete_latency_ms"] == pytest.approx(1000 * values.mean(), rel=1e-9)
    exact_p99 = 1000 * np.percentile(values, 99)
    assert row["complete_latency_p99_ms"] == pytest.approx(exact_p99, rel=0.01)


def test_no_trees_no_percentile():
    assert percentile_ms({}, 0.5) is None
    assert by_component([TaskStats("s", 1)], 1.0)["s"]["complete_latency_p99_ms"] == 0.0


def test_a_mean_above_the_p99_is_a_few_very_slow_trees_and_the_max_says_how_slow():
    """999 trees of 4 ms and 1 of 30 s (the first, while Spark warmed up): mean 34 ms."""
    stats = TaskStats("spout", 1, complete_latencies=[0.004] * 999 + [30.0])
    row = by_component([stats], 1.0)["spout"]
    assert row["complete_latency_ms"] == pytest.approx(1000 * (0.004 * 999 + 30) / 1000)
    assert row["complete_latency_p99_ms"] == pytest.approx(4.0, rel=0.01)
    assert row["complete_latency_ms"] > 8 * row["complete_latency_p99_ms"]
    assert row["complete_latency_max_ms"] == pytest.approx(30_000, rel=0.02)
    assert row["complete_latency_max_ms"] >= 30_000  # a bucket's top: never below the longest


def test_a_task_counted_in_two_attempts_is_one_task_and_its_counters_add_up():
    """After a restart the lost attempt's statistics are kept beside the new one's."""
    lost, now = TaskStats("split", 3, executed=10, prepares=1), TaskStats("split", 3, executed=4)
    other = TaskStats("split", 4, executed=5, prepares=1)
    row = by_component([lost, now, other], 1.0)["split"]
    assert (row["tasks"], row["executed"], row["prepares"]) == (2, 19, 2)
