"""Storm's partial key and custom groupings, on every engine and mode."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from sparkstorm import Bolt, Config, Fields, InvalidTopologyError, Spout, TopologyBuilder
from tests.conftest import run_on

N = 120


class Keys(Spout):
    """Emits N tuples, tracked: key 'hot' in half of them, then 'k0'..'k5'."""

    def open(self, conf, context, collector):
        self.collector, self.n = collector, 0

    def next_tuple(self):
        if self.n < N:
            n, self.n = self.n, self.n + 1
            self.collector.emit(["hot" if n % 2 else f"k{n % 6}", n], n)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("key", "n"))


class Where(Bolt):
    """Emits (key, its task) for each input, and acks it."""

    def prepare(self, conf, context, collector):
        self.collector, self.task = collector, context.get_this_task_id()

    def execute(self, tup):
        self.collector.emit([tup[0], self.task], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("key", "task"))


class Last(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


class Director(Bolt):
    """Emits each input directly to the task of ``to`` that its n picks (n mod tasks)."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.targets = context.get_component_tasks("direct")

    def execute(self, tup):
        n = tup[1]
        self.collector.emit_direct(self.targets[n % len(self.targets)], [n], tup, "to")
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"), "to", direct=True)


class DirectWhere(Where):
    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n", "task"))


class ByParity:
    """A CustomStreamGrouping: even n to the first target task, odd to the last."""

    def prepare(self, context, stream, target_tasks):
        self.targets = sorted(target_tasks)
        self.stream = stream

    def choose_tasks(self, task_id, values):
        return [self.targets[0] if values[1] % 2 == 0 else self.targets[-1]]


def test_partial_key_custom_and_direct_groupings_route_as_storm_s(engine, spark):
    """One run, three subscribers of the same stream: one per grouping."""
    builder = TopologyBuilder()
    builder.set_spout("keys", Keys())
    builder.set_bolt("partial", Where(), 4).partial_key_grouping("keys", Fields("key"))
    builder.set_bolt("custom", Where(), 4).custom_grouping("keys", ByParity())
    builder.set_bolt("director", Director(), 2).shuffle_grouping("keys")
    builder.set_bolt("direct", DirectWhere(), 3).direct_grouping("director", "to")
    builder.set_bolt("last", Last()).shuffle_grouping("partial").shuffle_grouping("custom")
    conf = Config()
    conf[Config.SPARKSTORM_CAPTURE] = ["partial", "custom", "direct"]
    result = run_on(engine, builder.create_topology(), conf, spark, until_idle=True, duration=60)
    assert result.stats["keys"]["acked"] == N

    # partial key: each key to at most two tasks, and the hot key split between two
    tasks_of = defaultdict(Counter)
    for key, task in result.captured[("partial", "default")]:
        tasks_of[key][task] += 1
    assert all(len(tasks) <= 2 for tasks in tasks_of.values()), dict(tasks_of)
    hot = tasks_of["hot"]
    assert len(hot) == 2 and min(hot.values()) >= 20  # 60 tuples, split between two tasks

    # custom: prepared with the targets, even n to the first task, odd n to the last
    rows = result.captured[("custom", "default")]
    tasks = sorted({task for _, task in rows})
    assert len(tasks) == 2 and len(rows) == N
    assert {task for key, task in rows if key == "hot"} == {tasks[-1]}  # odd n: the last

    # direct: each n reached the task the emitter picked, n mod 3 among the tasks
    rows = result.captured[("direct", "default")]
    tasks = sorted({task for _, task in rows})
    assert len(rows) == N and len(tasks) == 3
    assert all(task == tasks[n % 3] for n, task in rows)


def test_a_custom_grouping_is_checked():
    builder = TopologyBuilder()
    builder.set_spout("keys", Keys())
    with pytest.raises(InvalidTopologyError, match="needs an object with choose_tasks"):
        builder.set_bolt("where", Where()).custom_grouping("keys", object())
