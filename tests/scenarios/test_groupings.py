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


class ByParity:
    """A CustomStreamGrouping: even n to the first target task, odd to the last."""

    def prepare(self, context, stream, target_tasks):
        self.targets = sorted(target_tasks)
        self.stream = stream

    def choose_tasks(self, task_id, values):
        return [self.targets[0] if values[1] % 2 == 0 else self.targets[-1]]


def run_grouped(engine, spark, grouping):
    builder = TopologyBuilder()
    builder.set_spout("keys", Keys())
    where = builder.set_bolt("where", Where(), 4)
    grouping(where)
    builder.set_bolt("last", Last()).shuffle_grouping("where")
    conf = Config()
    conf[Config.SPARKSTORM_CAPTURE] = ["where"]
    result = run_on(engine, builder.create_topology(), conf, spark, until_idle=True, duration=60)
    assert result.stats["keys"]["acked"] == N
    return result.captured[("where", "default")], result


def test_partial_key_grouping_sends_each_key_to_at_most_two_tasks_and_splits_a_hot_one(
    engine, spark
):
    rows, _ = run_grouped(engine, spark, lambda b: b.partial_key_grouping("keys", Fields("key")))
    tasks_of = defaultdict(Counter)
    for key, task in rows:
        tasks_of[key][task] += 1
    assert all(len(tasks) <= 2 for tasks in tasks_of.values()), dict(tasks_of)
    hot = tasks_of["hot"]
    assert len(hot) == 2 and min(hot.values()) >= 20  # 60 tuples, split between two tasks


def test_custom_grouping_chooses_and_is_prepared_per_task_with_the_targets(engine, spark):
    rows, _ = run_grouped(engine, spark, lambda b: b.custom_grouping("keys", ByParity()))
    tasks = sorted({task for _, task in rows})
    assert len(tasks) == 2  # the first and last of where's four tasks
    assert {task for key, task in rows if key == "hot"} == {tasks[-1]}  # odd n: the last


def test_a_custom_grouping_is_checked():
    builder = TopologyBuilder()
    builder.set_spout("keys", Keys())
    with pytest.raises(InvalidTopologyError, match="needs an object with choose_tasks"):
        builder.set_bolt("where", Where()).custom_grouping("keys", object())
