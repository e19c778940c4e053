"""Stateful windowed bolts: windows checkpointed with the state, each message in one window.

``tally`` counts, per tumbling window of 7 sentences (the spout's batch is 10, so windows
straddle supersteps and checkpoints), each sentence number it held; beside
it the word count of tests/state/topology.py rolls back now and then (``count`` raises
after counting on some first attempts). Rollbacks return the windows to their last
commit, so in committed state every sentence was in exactly one window.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from sparkstorm import Duration, TopologyBuilder, run
from sparkstorm.config import resolve
from sparkstorm.control.clock import WallClock
from sparkstorm.control.superstep import TopologyRuntime
from sparkstorm.engines import make_engine
from sparkstorm.state.stores import open_store
from sparkstorm.topology.plan import Plan
from tests.conftest import run_on
from tests.state.test_exactly_once import committed_counts, conf_for
from tests.state.topology import ReplayingSpout, build_windowed, expected_counts, sentences

TALLY = Plan(build_windowed([]), resolve({})).component_tasks("tally")[0]


def tallied(provider: tuple[str, dict[str, Any]], name: str, part: str = "") -> dict[Any, int]:
    """What ``tally`` committed: its state, or with ``part=":windows"`` its saved windows."""
    return open_store(*provider, name).load(f"tally:{TALLY}{part}")[1]


@pytest.mark.parametrize("engine", ["local", "spark", "continuous"], indirect=True)
@pytest.mark.parametrize("arrow", [False, True], ids=["tuples", "columns"])
def test_rollbacks_return_windows_to_the_commit_and_each_message_is_in_one_window(
    engine, arrow, tmp_path
):
    """One provider (the stores have tests of their own); on Spark fewer sentences, as
    each rollback there costs a few supersteps. ``arrow``: the windows in columns."""
    provider = ("directory", {"path": str(tmp_path / "state")})
    items = sentences(210 if engine == "local" else 70)
    name = f"windows-{uuid.uuid4().hex[:8]}"
    topology = build_windowed(items, arrow=arrow)
    result = run_on(engine, topology, conf_for(provider), name=name)
    assert result.stats["sentences"]["acked"] == len(items)
    assert result.stats["sentences"]["fail_reasons"].get("rollback", 0) > 0
    state = tallied(provider, name)
    assert state.pop("windows") == len(items) // 7
    assert state == {number: 1 for number, _ in items}
    assert committed_counts(*provider, name) == expected_counts(items)


def test_a_restarted_driver_resumes_the_windows_it_committed(provider):
    """Stop dead mid-stream with tuples in the window; a restart carries them on."""
    items, name = sentences(213), f"restart-windows-{uuid.uuid4().hex[:8]}"
    conf = conf_for(provider)
    first = TopologyRuntime(name, build_windowed(items), conf, make_engine("local"), WallClock())
    deadline = time.monotonic() + 30
    while True:
        first.step()
        time.sleep(0.01)
        saved = tallied(provider, name) if first.checkpoints.committed >= 2 else {}
        if saved and any(isinstance(k, int) for k in tallied(provider, name, ":windows")):
            break  # a commit with tuples waiting in the window (keyed by sequence number)
        assert time.monotonic() < deadline, "no checkpoint was taken with a partial window"
    spout = first.spouts[first.plan.spout_tasks[0]].spout
    rest = [item for item in items if item[0] not in spout.acked]
    second = run(build_windowed(rest), conf, engine="local", name=name)
    assert second.stats["sentences"]["acked"] == len(rest)
    state = tallied(provider, name)
    assert state.pop("windows") == len(items) // 7
    in_windows = set(state)  # the last 3 sentences wait for a window that never comes
    assert len(in_windows) == len(items) - 3 and set(state.values()) == {1}


def test_a_stateful_window_may_outlast_the_message_timeout():
    """Its inputs are acked as they arrive: Storm's timeout check does not apply."""
    from tests.state.topology import WindowTally

    builder = TopologyBuilder()
    builder.set_spout("sentences", ReplayingSpout(sentences(20)))
    tally = WindowTally().with_window(Duration(60), Duration(30))
    builder.set_bolt("tally", tally).shuffle_grouping("sentences")
    conf = {"topology.message.timeout.secs": 5}
    result = run(builder.create_topology(), conf, engine="local", duration=1.5)
    assert result.stats["sentences"]["acked"] == 20  # no window fired; every tree completed
