"""A windowed task's windows travel in its snapshot: a fresh instance carries on."""

from __future__ import annotations

from sparkstorm import Config, Count, Fields, TopologyBuilder
from sparkstorm.config import resolve
from sparkstorm.tasks.task_runner import BoltTask
from sparkstorm.tasks.task_state import restore, snapshot
from sparkstorm.testing import FeederSpout
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.tuple import Tuple
from tests.scenarios.windows import Recorder


def test_a_restored_windowed_task_has_its_windows_and_what_is_new():
    builder = TopologyBuilder()
    builder.set_spout("in", FeederSpout(Fields("x")))
    builder.set_bolt("window", Recorder().with_window(Count(3), Count(2))).global_grouping("in")
    plan = Plan(builder.create_topology(), resolve({Config.TOPOLOGY_ACKER_EXECUTORS: 0}))
    [task_id] = plan.component_tasks("window")

    def fresh() -> BoltTask:
        task = BoltTask(plan, task_id, seed=0)
        task.prepare()
        return task

    def feed(task: BoltTask, values: list[str], step: int) -> None:
        tuples = [Tuple([v], Fields("x"), "in", "default", 1) for v in values]
        task.run(tuples, step, float(step), [], captured=[])

    first = fresh()
    feed(first, ["a", "b", "c"], 0)  # a window of a, b fired; c waits
    data = snapshot(first)
    second = fresh()  # another worker's instance: empty windows until restored
    restore(second, data)
    captured: list = []
    second.run([Tuple(["d"], Fields("x"), "in", "default", 1)], 1, 1.0, [], captured=captured)
    [(_, _, values)] = captured
    assert values[:3] == [["b", "c", "d"], ["c", "d"], ["a"]]
