"""Exactly-once state: whatever fails, each sentence is counted once in committed state.

``split`` fails first attempts of some sentences, ``count`` raises after counting on
others (its state then holds an effect of a failed tree: only a rollback can undo it),
and the spout replays every failure. The committed counts must equal the exact ones.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from sparkstorm import InvalidTopologyError, run
from sparkstorm.control.clock import SimulatedClock, WallClock
from sparkstorm.control.superstep import TopologyRuntime
from sparkstorm.engines import make_engine
from sparkstorm.state.stores import open_store
from tests.conftest import run_on
from tests.state.topology import build, build_holding, expected_counts, sentences


def committed_counts(provider: str, config: dict[str, Any], topology: str) -> dict[str, int]:
    store = open_store(provider, config, topology)
    counts: dict[str, int] = {}
    for task in ("count:2", "count:3"):  # count's tasks (acker 1, count 2-3, ...)
        for word, n in store.load(task)[1].items():
            counts[word] = counts.get(word, 0) + n
    return counts


def conf_for(provider: tuple[str, dict[str, Any]], **extra: Any) -> dict[str, Any]:
    name, config = provider
    return {
        "topology.state.provider": name,
        "topology.state.provider.config": config,
        "topology.state.checkpoint.interval.ms": 100,
        "sparkstorm.superstep.spout.batch": 10,  # many supersteps, so many checkpoints
        **extra,
    }


@pytest.mark.parametrize(
    ("engine", "provider", "arrow"),
    [
        ("local", "directory", False),
        ("local", "redis", False),
        ("spark", "redis", False),
        ("continuous", "directory", False),
        # the count a StatefulArrowBolt: its rows' acks held, failed rows roll back
        ("local", "redis", True),
        ("spark", "directory", True),
        ("continuous", "redis", True),
    ],
    indirect=["engine", "provider"],
)
def test_failures_roll_back_and_every_sentence_counts_once(engine, provider, arrow):
    items = sentences(200)
    name = f"exact-{uuid.uuid4().hex[:8]}"
    conf = conf_for(provider)
    result = run_on(engine, build(items, arrow=arrow), conf, name=name, spark_ui=False)
    spout = result.stats["sentences"]
    assert spout["acked"] == len(items)
    assert spout["fail_reasons"].get("rollback", 0) > 0  # the failures did cost rollbacks
    assert result.stats["count"]["checkpoint_keys"] > 0
    assert committed_counts(*provider, name) == expected_counts(items)


def test_a_restarted_driver_resumes_from_the_last_commit(provider):
    """Crash mid-run (no stop, no cleanup), restart, replay what was not acked: exact."""
    items = sentences(300)
    name = f"restart-{uuid.uuid4().hex[:8]}"
    conf = conf_for(provider)
    first = TopologyRuntime(name, build(items), conf, make_engine("local"), WallClock())
    deadline = time.monotonic() + 30
    # run until some checkpoints are committed, then stop dead between two of them:
    # outside the commit's window (see docs/reliability.md), in the middle of the stream
    while not (first.checkpoints.committed >= 1 and first.checkpoints.phase != "committing"):
        first.step()
        time.sleep(0.01)  # a paced stream: checkpoints fall in the middle of it
        assert time.monotonic() < deadline, "no checkpoint was taken"
    spout = first.spouts[first.plan.spout_tasks[0]].spout
    acked = set(spout.acked)
    assert 0 < len(acked) < len(items)
    # an at-least-once source gives the new run every message not acked
    rest = [item for item in items if item[0] not in acked]
    second = run(build(rest), conf, engine="local", name=name)
    assert second.stats["sentences"]["acked"] == len(rest)
    assert committed_counts(*provider, name) == expected_counts(items)


class Crashed(BaseException):
    """The driver dies here (a BaseException: nothing in the runtime catches it)."""


def crash_as_a_checkpoint_commits(name: str, items: list, conf: dict) -> tuple[Any, set]:
    """Run until the driver writes a marker with trees pending; die right after the write.

    The marker is in the store; the spout has not been given the acks yet. Returns the
    runtime and the sentence numbers its spout acked.
    """
    first = TopologyRuntime(name, build(items), conf, make_engine("local"), WallClock())
    task = first.spouts[first.plan.spout_tasks[0]]
    spout, store = task.spout, first.checkpoints.store
    write = store.mark_committed

    def write_then_die(txid: int, sources: Any = None) -> None:
        write(txid, sources)
        if task.sealed and len(spout.queue) < len(items):  # trees pending, mid-stream
            raise Crashed

    store.mark_committed = write_then_die  # the store is this process's own (shared)
    deadline = time.monotonic() + 30
    try:
        while True:
            first.step()
            time.sleep(0.01)
            assert time.monotonic() < deadline, "no checkpoint was committed"
    except Crashed:
        return first, set(spout.acked)
    finally:
        del store.mark_committed


def test_a_driver_dead_as_a_checkpoint_commits_does_not_count_twice(provider):
    """Crash after the marker, before the spout acks: the replays are skipped, not recounted."""
    items, name, conf = sentences(300), f"window-{uuid.uuid4().hex[:8]}", conf_for(provider)
    first, acked = crash_as_a_checkpoint_commits(name, items, conf)
    committed = set(first.checkpoints.store.committed_sources()["sentences"])
    assert committed and not committed & acked  # committed, and not yet acked
    rest = [item for item in items if item[0] not in acked]
    second = run(build(rest), conf, engine="local", name=name)
    assert second.stats["sentences"]["acked"] == len(rest)
    assert second.stats["sentences"]["skipped_committed"] == len(committed)
    assert committed_counts(*provider, name) == expected_counts(items)


def test_without_message_keys_the_window_counts_twice(provider, monkeypatch):
    """The same crash without ``message_key``: the test above is what prevents this."""
    from tests.state.topology import ReplayingSpout

    monkeypatch.setattr(ReplayingSpout, "message_key", lambda self, msg_id: None)
    items, name, conf = sentences(300), f"nokey-{uuid.uuid4().hex[:8]}", conf_for(provider)
    _, acked = crash_as_a_checkpoint_commits(name, items, conf)
    run(build([item for item in items if item[0] not in acked]), conf, engine="local", name=name)
    exact, counted = expected_counts(items), committed_counts(*provider, name)
    assert sum(counted.values()) > sum(exact.values())


@pytest.mark.parametrize("arrow", [False, True], ids=["tuples", "columns"])
def test_a_superstep_lost_as_a_checkpoint_commits_does_not_count_twice(
    spark, tmp_path, caplog, arrow
):
    """A Python worker dies on ``commit``: the marker is written, the superstep is lost.

    The trees that checkpoint completes are in committed state: the rollback that
    follows the loss must ack them, not fail them back to be counted again (before the
    fix, every word of that checkpoint's sentences was counted twice). One provider:
    the store plays no part in this.
    """
    from tests.state.topology import build_crashing

    items, name, flag = sentences(120), f"lost-{uuid.uuid4().hex[:8]}", tmp_path / "crashed"
    provider = ("directory", {"path": str(tmp_path / "state")})
    conf = conf_for(provider)
    result = run_on("spark", build_crashing(items, str(flag), arrow), conf, spark, name=name)
    assert flag.exists(), "no worker crashed on a commit"
    lost = [e for e in result.errors if e.component == "__system" and "lost" in e.message]
    assert lost and all(e.recovered for e in lost)
    said = [r for r in caplog.records if "superstep" in r.getMessage() and "lost" in r.getMessage()]
    said += [r for r in caplog.records if "failed on Spark" in r.getMessage()]
    assert len(said) == len(lost), [r.getMessage()[:80] for r in said]  # said once each
    assert result.stats["sentences"]["acked"] == len(items)
    assert committed_counts(*provider, name) == expected_counts(items)


def test_a_tree_the_spout_timed_out_is_not_committed_by_the_next_checkpoint(provider):
    """The acker keeps a tree a rotation longer than the spout (as Storm's does).

    Message timeout 2 s, simulated time. Every tree is ready (its counts held) within a
    few supersteps, but ``hold`` keeps sentence 0's first attempt unready until 4.5 s, so
    no checkpoint can drain before then. The spout times every first attempt out at 4 s
    and replays it; the acker would expire them only at 6 s. Before the fix, the
    checkpoint at 4.5 s committed the first attempts and then their replays: every word
    counted twice. Now a spout's timeout rolls back.
    """
    items, name = sentences(30), f"timeout-{uuid.uuid4().hex[:8]}"
    conf = conf_for(provider, **{"topology.message.timeout.secs": 2})
    clock = SimulatedClock()
    runtime = TopologyRuntime(name, build_holding(items, 9), conf, make_engine("local"), clock)
    spout = runtime.spouts[runtime.plan.spout_tasks[0]]
    for _ in range(300):  # 30 s of topology time, in steps of 0.1 s
        runtime.step()
        clock.advance(0.1)
        if not spout.spout.queue and runtime.idle() and not runtime.pending_count():
            break
    assert spout.stats.fail_reasons.get("timeout", 0) > 0  # the scenario happened
    assert spout.spout.acked == {number for number, _ in items}
    assert committed_counts(*provider, name) == expected_counts(items)


def test_a_checkpoint_interval_not_under_the_message_timeout_is_refused():
    conf = {"topology.state.checkpoint.interval.ms": 30000, "topology.message.timeout.secs": 30}
    with pytest.raises(InvalidTopologyError, match=r"interval.ms \(30000\) is not less than"):
        run(build(sentences(1)), conf, engine="local")
