"""The restart strategy: a healthy stream on a hostile cluster runs on, a crash loop ends."""

from __future__ import annotations

import pytest

from sparkstorm.config import DEFAULTS, resolve
from sparkstorm.control.restarts import RestartStrategy
from sparkstorm.engines.spark.continuous import loss_reason
from sparkstorm.errors import SparkStormError


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def strategy(clock: Clock, **overrides: float) -> RestartStrategy:
    conf = resolve({f"sparkstorm.restart.{k.replace('_', '.')}": v for k, v in overrides.items()})
    made = RestartStrategy.from_conf(conf)
    made._clock = clock
    made.running()
    return made


def lose_then_restart(made: RestartStrategy, clock: Clock, start_secs: float) -> float:
    """One loss; the wait it asks for and a start of ``start_secs`` pass; it runs again."""
    delay = made.lost("the workers were", "killed")
    clock.now += delay + start_secs
    made.running()
    return delay


def test_a_worker_lost_every_25_s_for_a_week_never_ends_the_run():
    clock = Clock()
    made = strategy(clock)
    for _ in range(7 * 24 * 3600 // 25):
        clock.now += 25 - 3  # running between losses
        assert lose_then_restart(made, clock, 2) == 1.0  # a stable period resets the delay
    assert made.count == 24192
    assert len(made.history) == 100  # bounded


def test_a_crash_loop_ends_within_two_minutes_with_one_line_even_on_a_slow_cluster():
    for start_secs in (0.5, 3.0, 9.0):  # however long a start takes, under the stable period
        clock = Clock()
        made = strategy(clock)
        delays = []
        with pytest.raises(SparkStormError) as raised:
            for _ in range(20):
                delays.append(lose_then_restart(made, clock, start_secs))
        assert delays == [1, 2, 4, 8, 10, 10]  # exponential, capped
        assert clock.now < 120, clock.now
        said = str(raised.value)
        assert "\n" not in said
        assert "lost 7 times in a row, each within 10 s of starting: a crash loop" in said
        assert said.endswith("The last loss: killed")


def test_too_many_losses_within_the_interval_end_the_run_even_when_each_ran_stable():
    clock = Clock()
    made = strategy(clock, max_failures=3, failure_interval_secs=60)
    with pytest.raises(
        SparkStormError,
        match=r"lost 4 times within 60 s, more than "
        r"sparkstorm.restart.max.failures=3 allows; giving up",
    ):
        for _ in range(4):
            clock.now += 12  # stable (10 s) each time, but 4 in 60 s
            lose_then_restart(made, clock, 0)


def test_losses_older_than_the_interval_no_longer_count():
    clock = Clock()
    made = strategy(clock, max_failures=2, failure_interval_secs=60)
    for _ in range(50):
        clock.now += 31  # two per minute at most
        lose_then_restart(made, clock, 0)
    assert made.count == 50


def test_the_defaults_are_in_the_configuration_and_checked():
    assert DEFAULTS["sparkstorm.restart.max.failures"] == 6
    with pytest.raises(Exception, match=r"sparkstorm\.restart\.max\.failures"):
        resolve({"sparkstorm.restart.max.failures": 0})


def test_sparks_stage_failure_is_one_line_naming_the_lost_worker():
    failure = (
        "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Could not recover "
        "from a failed barrier ResultStage. Most recent failure reason: Stage failed because "
        "barrier task ResultTask(6, 1) finished unsuccessfully.\n"
        "org.apache.spark.SparkException: Python worker exited unexpectedly (crashed). Consider\n"
        "\tat org.apache.spark.api.python.BasePythonRunner\n"
    )
    assert loss_reason(failure) == ("worker 1: Python worker exited unexpectedly (crashed)", 1)
    aborted = "Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times"
    assert loss_reason(aborted) == ("worker 0: Task 0 in stage 3.0 failed 1 times", 0)
    assert loss_reason("boom\nmore") == ("boom", None)
