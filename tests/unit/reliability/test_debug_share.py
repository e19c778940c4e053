"""Storm UI's Debug on a running task: a sampled share of its calls, on, changed, off."""

from __future__ import annotations

import random

from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.reliability.debug import debug_share, set_debug_share
from sparkstorm.reliability.ids import id_source
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.tuple import Tuple
from tests.unit.reliability.test_collectors import make_plan


def collector() -> OutputCollector:
    plan = make_plan()
    task = plan.component_tasks("a")[0]
    c = OutputCollector(plan, task)
    c.begin([], id_source(0, 1, task), 0.0, 1)
    return c


def acks(c: OutputCollector, n: int) -> list[str]:
    """Ack ``n`` tuples; the lines noted meanwhile."""
    for i in range(n):
        c.ack(Tuple([i], Fields("v"), "s", "default", 9, {i + 1: 7}))
    lines: list[str] = []
    c.hand_over([], lines)
    return lines


def test_a_share_of_the_calls_is_noted_and_turning_it_off_restores_the_collector():
    random.seed(7)
    c = collector()
    assert debug_share(c) == 0.0 and acks(c, 100) == []
    set_debug_share(c, 1.0)
    assert len(acks(c, 100)) == 100
    set_debug_share(c, 0.1)  # sampled: about one in ten
    assert 700 <= len(acks(c, 10_000)) <= 1300
    assert all(line.startswith("BOLT ack TASK: ") for line in acks(c, 50))
    set_debug_share(c, 0.0)
    assert "ack" not in vars(c) and "emit" not in vars(c)  # the class's methods again
    assert acks(c, 100) == [] and c.debug is None


def test_lines_noted_before_a_stop_or_a_change_are_handed_over():
    c = collector()
    set_debug_share(c, 1.0)
    for i in range(3):
        c.ack(Tuple([i], Fields("v"), "s", "default", 9, {i + 1: 7}))
    set_debug_share(c, 0.0)  # off, with three lines not handed over yet
    set_debug_share(c, 0.5)  # and on again before they were
    lines: list[str] = []
    c.hand_over([], lines)
    assert len(lines) == 3 and debug_share(c) == 0.5
