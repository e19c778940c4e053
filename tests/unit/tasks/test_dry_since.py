"""When a spout task counts as dry: the start of an until-idle run's grace."""

from __future__ import annotations

from typing import Any

from sparkstorm import Config, Fields, Spout, TopologyBuilder
from sparkstorm._types import TIMEOUT
from sparkstorm.config import resolve
from sparkstorm.tasks.spout_task import SpoutTask
from sparkstorm.topology.plan import Plan
from tests.scenarios.bolts import Ack


class Finite(Spout):
    """Emits ``count`` numbers, then nothing unless ``more`` is raised; drops a failure."""

    def __init__(self, count: int) -> None:
        self.count = count

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector, self.sent, self.more = collector, 0, 0

    def next_tuple(self) -> None:
        if self.sent < self.count + self.more:
            self.sent += 1
            self.collector.emit([self.sent], msg_id=self.sent)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("n"))


def spout_task(count: int) -> SpoutTask:
    builder = TopologyBuilder()
    builder.set_spout("in", Finite(count))
    builder.set_bolt("ack", Ack()).shuffle_grouping("in")
    plan = Plan(builder.create_topology(), resolve({Config.SPARKSTORM_SEED: 3}))
    task = SpoutTask(plan, plan.component_tasks("in")[0], seed=3)
    task.open()
    task.begin(0, 0.0)
    return task


def test_dry_from_the_first_empty_call_and_again_once_asked_after_an_outcome():
    task = spout_task(2)
    assert task.dry_since() is None  # never asked
    task.next_batch(1)
    assert task.dry_since() is None  # its one call emitted
    task.next_batch(10)  # the second number, then an empty call
    since = task.dry_since()
    assert since is not None
    task.fail_pending(TIMEOUT)  # an outcome: it may let the spout go on
    assert task.dry_since() is None
    task.next_batch(10)  # asked again, and still nothing
    assert task.dry_since() == since  # dry since the first empty call, all along


def test_an_emit_ends_the_dry_spell():
    task = spout_task(1)
    task.next_batch(10)
    first = task.dry_since()
    assert first is not None
    task.spout.more = 1
    task.next_batch(1)
    assert task.dry_since() is None
    task.next_batch(10)
    again = task.dry_since()
    assert again is not None and again > first
