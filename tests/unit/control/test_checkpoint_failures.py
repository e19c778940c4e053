"""The driver's rollback decisions from the failure counters the tasks report."""

from __future__ import annotations

from sparkstorm.control.clock import SimulatedClock
from sparkstorm.control.superstep import TopologyRuntime
from sparkstorm.engines import make_engine
from sparkstorm.engines.wire import StepResult
from sparkstorm.tasks.metrics import TaskStats
from tests.state.topology import build, sentences


def checkpoints():
    """A runtime's checkpoints, its first stateful task, and the runtime (they refer to
    it weakly: the test holds it)."""
    conf = {"topology.state.provider": "memory"}
    runtime = TopologyRuntime(
        "f", build(sentences(1)), conf, make_engine("local"), SimulatedClock()
    )
    return runtime.checkpoints, runtime.plan.stateful_tasks[0], runtime


def failures(task: int, count: int) -> StepResult:
    stats = TaskStats("count", task)
    stats.state_failures = count
    return StepResult([], 0, stats=[stats])


def rolls_back(points, result: StepResult) -> bool:
    points.observe(result)
    return any(tup.values[0] == "rollback" for _, tup in points.rows(0.0))


def test_a_growing_failure_counter_rolls_back_and_a_steady_one_does_not():
    points, task, _runtime = checkpoints()
    assert rolls_back(points, failures(task, 2))
    assert not rolls_back(points, failures(task, 2))
    assert rolls_back(points, failures(task, 3))


def test_after_a_lost_superstep_fresh_tasks_count_failures_from_zero():
    """A lost executor drops every task: their counters restart, and still count."""
    points, task, _runtime = checkpoints()
    assert rolls_back(points, failures(task, 5))
    assert rolls_back(points, StepResult([], 0, lost=True))
    assert rolls_back(points, failures(task, 1))  # a fresh task's first failure
