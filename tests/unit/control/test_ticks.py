"""Ticks on the topology's clock: no burst of stale ticks, and time starts after start-up."""

from __future__ import annotations

from sparkstorm import Config, Fields, TopologyBuilder
from sparkstorm.control.clock import SimulatedClock
from sparkstorm.control.superstep import TopologyRuntime
from sparkstorm.engines.local import LocalEngine
from sparkstorm.testing import FeederSpout
from tests.scenarios.bolts import TickCounter


class SlowToStart(LocalEngine):
    """A local engine whose start takes 100 s of the clock, as a Spark session may."""

    def __init__(self, clock: SimulatedClock) -> None:
        super().__init__()
        self.clock = clock

    def start(self, plan, seed, capture):
        self.clock.advance(100)
        super().start(plan, seed, capture)


def runtime_with_ticks(freq: float) -> tuple[TopologyRuntime, SimulatedClock]:
    builder = TopologyBuilder()
    builder.set_spout("feed", FeederSpout(Fields("x")))
    builder.set_bolt("ticks", TickCounter()).shuffle_grouping("feed").add_configuration(
        Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, freq
    )
    clock = SimulatedClock()
    engine = SlowToStart(clock)
    runtime = TopologyRuntime("t", builder.create_topology(), {}, engine, clock, capture=True)
    return runtime, clock


def test_topology_time_starts_when_the_engine_is_up():
    runtime, _ = runtime_with_ticks(10)
    assert runtime.now() == 0
    runtime.step()
    runtime.step()
    assert runtime.captured.get(("ticks", "default"), []) == []  # no tick for start-up time


def test_a_late_bolt_gets_one_tick_not_a_burst():
    runtime, clock = runtime_with_ticks(1)
    clock.advance(10.5)  # ten ticks due at once
    for _ in range(3):
        runtime.step()
    assert runtime.captured[("ticks", "default")] == [[1]]
    clock.advance(0.6)  # the next is due a period after the late one, not at 11
    runtime.step()
    runtime.step()
    assert runtime.captured[("ticks", "default")] == [[1]]
    clock.advance(0.5)
    runtime.step()
    runtime.step()
    assert runtime.captured[("ticks", "default")] == [[1], [2]]
