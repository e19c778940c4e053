"""A finished run keeps nothing of its topology: what a spout holds is freed as ``run``
returns, without waiting for the cyclic collector's next pass over the process."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from sparkstorm import Fields, TopologyBuilder
from sparkstorm.testing import FixedTupleSpout, IdentityBolt
from tests.conftest import run_on


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations of the cyclic collections made meanwhile; automatic ones off."""
    made: list[int] = []

    def note(phase: str, info: dict) -> None:
        if phase == "start":
            made.append(info["generation"])

    gc.collect()
    gc.disable()
    gc.callbacks.append(note)
    try:
        yield made
    finally:
        gc.callbacks.remove(note)
        gc.enable()


def test_a_finished_run_frees_its_topology_s_components(engine, collections, request):
    spark = request.getfixturevalue("spark") if engine != "local" else None
    spout = FixedTupleSpout([[i] for i in range(50)], Fields("n"))
    builder = TopologyBuilder()
    builder.set_spout("numbers", spout)
    builder.set_bolt("same", IdentityBolt(Fields("n"))).shuffle_grouping("numbers")
    topology = builder.create_topology()
    held = weakref.ref(spout)
    result = run_on(engine, topology, {}, spark)
    assert result.stats["numbers"]["acked"] == 50
    del topology, builder, spout
    assert held() is None, "the run still holds the topology's spout"
    if engine == "continuous":  # its driver side leaves no cycle: reference counts free it
        assert 2 not in collections, "the run left a cycle for the collector"
