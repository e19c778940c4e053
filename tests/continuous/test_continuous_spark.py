"""The Spark engine's continuous mode on the shared local[2] session: a barrier stage of
two workers holding spout, bolt and acker tasks, tuples between them over ZeroMQ."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time

import httpx
import pytest

from examples.word_count import SENTENCES, SentenceSpout, SplitSentence, WordCount
from sparkstorm import Config, Fields, SparkStormError, TopologyBuilder, run
from tests.continuous.components import (
    DiesInPrepare,
    FailFirstOfEveryFifth,
    FailsOnceThenKills,
    FolderQueue,
    ForgetsSeven,
    FreezesItsWorkerOnce,
    HoldUntilTick,
    InOrder,
    KillsItsWorkerOnce,
    NumberSpout,
    SleepsOnce,
)
from tests.state.bolts import StatefulWordCount

pytestmark = pytest.mark.spark


def continuous(**more) -> Config:
    conf = Config()
    conf["sparkstorm.spark.mode"] = "continuous"
    conf.update(more)
    return conf


def test_word_count_acks_every_sentence_once(spark):
    sentences = SENTENCES * 300
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(sentences))
    builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCount(), 2).fields_grouping("split", Fields("word"))
    result = run(builder.create_topology(), continuous(), engine="spark", spark=spark)
    words = sum(len(s.split()) for s in sentences)
    assert result.errors == []
    assert result.stats["sentences"]["acked"] == len(sentences)
    assert result.stats["sentences"]["failed"] == 0
    assert result.stats["count"]["executed"] == words
    assert result.stats["sentences"]["pending"] == 0


def test_tuples_between_two_tasks_arrive_in_emission_order(spark):
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(20_000), 2)
    builder.set_bolt("check", InOrder(), 3).shuffle_grouping("numbers")
    result = run(builder.create_topology(), continuous(), engine="spark", spark=spark)
    assert result.errors == []  # InOrder raises, and it is reported, on any reordering
    assert result.stats["numbers"]["acked"] == 20_000
    assert result.stats["check"]["executed"] == 20_000


def test_explicit_failures_reach_the_spout_and_replays_complete(spark):
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(1_000))
    builder.set_bolt("flaky", FailFirstOfEveryFifth(), 2).fields_grouping(
        "numbers", Fields("number")
    )
    result = run(builder.create_topology(), continuous(), engine="spark", spark=spark)
    spout = result.stats["numbers"]
    assert spout["acked"] == 1_000
    assert spout["failed"] == 200
    assert spout["fail_reasons"] == {"explicit": 200}


def test_a_tree_never_acked_times_out_at_its_spout(spark):
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(20, replay=False))
    builder.set_bolt("forgetful", ForgetsSeven()).shuffle_grouping("numbers")
    conf = continuous()
    conf.set_message_timeout_secs(1)
    result = run(builder.create_topology(), conf, engine="spark", spark=spark)
    spout = result.stats["numbers"]
    assert (spout["acked"], spout["failed"]) == (19, 1)
    assert spout["fail_reasons"] == {"timeout": 1}


def test_max_spout_pending_bounds_what_a_spout_task_has_in_flight(spark):
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(40))
    holder = builder.set_bolt("hold", HoldUntilTick(most=10)).global_grouping("numbers")
    holder.add_configuration(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 0.5)
    conf = continuous()
    conf.set_max_spout_pending(10)
    result = run(builder.create_topology(), conf, engine="spark", spark=spark)
    assert result.errors == []  # the bolt raises if it ever holds more than 10
    assert result.stats["numbers"]["acked"] == 40
    assert result.stats["hold"]["executed"] >= 40 + 3  # and the ticks that released them


def test_a_stateful_bolt_commits_its_state_and_a_second_run_resumes_from_it(spark, tmp_path):
    """The checkpoints run across workers: each run's acks wait for a commit, and the
    second run's tasks load what the first committed."""
    from sparkstorm.config import resolve
    from sparkstorm.state.stores import open_store
    from sparkstorm.topology.plan import Plan

    provider = {"path": (tmp_path / "state").as_uri()}
    conf = continuous()
    conf.update(
        {
            "topology.state.provider": "directory",
            "topology.state.provider.config": provider,
            "topology.state.checkpoint.interval.ms": 100,
        }
    )
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(30), 2)
    builder.set_bolt("tally", StatefulWordCount(), 2).fields_grouping("numbers", Fields("number"))
    for run_number in (1, 2):
        result = run(builder.create_topology(), conf, engine="spark", spark=spark, name="tally")
        assert result.errors == []
        assert result.stats["numbers"]["acked"] == 30
        store = open_store("directory", provider, "tally")
        counts: dict[int, int] = {}
        for task in Plan(builder.create_topology(), resolve(conf)).component_tasks("tally"):
            counts.update(store.load(f"tally:{task}")[1])
        assert counts == {n: run_number for n in range(30)}


def test_a_call_that_blocks_in_a_worker_is_reported_by_the_driver(spark, caplog):
    """The worker's watchdog tells the driver, which logs the call, worker and stack."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(20))
    builder.set_bolt("slow", SleepsOnce(3.0)).shuffle_grouping("numbers")
    conf = continuous(**{"sparkstorm.watchdog.secs": 1.0})
    result = run(builder.create_topology(), conf, engine="spark", spark=spark)
    assert result.stats["numbers"]["acked"] == 20  # it returned, and the run went on
    blocked = [r.getMessage() for r in caplog.records if "has not returned" in r.getMessage()]
    assert len(blocked) == 1, blocked
    assert "execute() of bolt 'slow' task" in blocked[0]
    assert "in continuous worker" in blocked[0]
    assert "components.py" in blocked[0]  # the user's frame: where it blocks


def test_more_workers_than_task_slots_is_refused_at_once(spark):
    """A barrier stage waits for all its slots: on local[2], three workers never start."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(10))
    builder.set_bolt("in_order", InOrder(), 3).shuffle_grouping("numbers")
    conf = continuous(**{"sparkstorm.spark.partitions": 3})
    started = time.monotonic()
    with pytest.raises(SparkStormError, match=r"needs 3 task slots .* local\[2\] has 2"):
        run(builder.create_topology(), conf, engine="spark", spark=spark)
    assert time.monotonic() - started < 10


FAST_RESTARTS = {
    "sparkstorm.restart.delay.initial.secs": 0.2,
    "sparkstorm.restart.delay.max.secs": 0.5,
}


def test_workers_lost_again_and_again_are_restarted_each_time_and_counted_once(spark, tmp_path):
    """Four losses (the run used to die at its fourth), each counted once, each restarted
    after the strategy's exponential delay; the run then finishes every number."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(300))
    killers = [50, 100, 150, 200]
    builder.set_bolt("killer", KillsItsWorkerOnce(str(tmp_path), killers), 2).shuffle_grouping(
        "numbers"
    )
    conf = continuous(**FAST_RESTARTS)
    shown: list[dict] = []

    def poll(runtime) -> None:  # what the REST API shows while the run goes on
        url = f"{runtime.api_url}/api/v1/topology/restarts"
        shown.append(httpx.get(url, timeout=5).json())

    result = run(
        builder.create_topology(),
        conf,
        engine="spark",
        spark=spark,
        name="restarts",
        api=True,
        on_progress=poll,
        progress_secs=0.5,
    )
    lost = [e.message for e in result.errors if "a continuous worker was lost" in e.message]
    assert len(lost) == 4, lost
    assert all(e.recovered for e in result.errors), result.errors
    for attempt, (said, delay) in enumerate(
        zip(lost, ["0.2", "0.4", "0.5", "0.5"], strict=True), start=2
    ):
        assert said.endswith(f"start again (attempt {attempt}) in {delay} s"), said
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"killed-{n}" for n in killers)
    assert result.stats["numbers"]["pending"] == 0
    assert result.stats["numbers"]["acked"] >= 300  # the last attempt acked every number
    latest = shown[-1]
    assert 1 <= latest["restartCount"] == len(latest["restarts"]) <= 4, latest["restarts"]
    for restart in latest["restarts"]:
        assert restart["worker"] in (0, 1), restart
        assert restart["reason"].startswith(f"worker {restart['worker']}: "), restart
        assert restart["delaySecs"] in (0.2, 0.4, 0.5), restart
        assert abs(restart["time"] - time.time()) < 120, restart


def test_a_failure_before_a_lost_worker_is_settled_by_its_replay_after_it(spark, tmp_path):
    """A message failed, its workers lost, and its redelivery acked by the new start:
    it failed on the way, not for good (the run's exit code). The failure was counted
    by a spout task of the lost stage; the task's new start takes it on."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", FolderQueue(str(tmp_path), 100, hold_at=50, hold_secs=1.0))
    check = FailsOnceThenKills(str(tmp_path), killers=[60], failing=7)
    builder.set_bolt("check", check, 2).shuffle_grouping("numbers")
    result = run(builder.create_topology(), continuous(**FAST_RESTARTS), "spark", spark=spark)
    lost = [e.message for e in result.errors if "a continuous worker was lost" in e.message]
    assert len(lost) == 1, result.errors
    assert {p.name for p in tmp_path.glob("done-*")} == {f"done-{n}" for n in range(100)}
    numbers = result.stats["numbers"]
    assert numbers["fail_reasons"] == {"explicit": 1}, numbers
    assert numbers["failed_for_good"] == {} and numbers["replayed_acked"] == 1, numbers


def test_a_worker_that_falls_silent_is_lost_and_the_run_goes_on(spark, tmp_path):
    """A frozen worker process (as one whose host is cut off) sends nothing: after
    sparkstorm.worker.timeout.secs it counts as lost, the stage is cancelled (Spark kills
    the frozen process) and started again, and every number is acked."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(2000))
    builder.set_bolt("freezer", FreezesItsWorkerOnce(str(tmp_path), 500), 2).shuffle_grouping(
        "numbers"
    )
    conf = continuous(**FAST_RESTARTS, **{"sparkstorm.worker.timeout.secs": 3})
    try:
        result = run(builder.create_topology(), conf, engine="spark", spark=spark)
    finally:
        frozen = int((tmp_path / "frozen").read_text())
        with contextlib.suppress(ProcessLookupError):
            os.kill(frozen, signal.SIGKILL)  # Spark's kill did not reach it: fail below
            pytest.fail(f"the frozen worker process {frozen} outlived the run")
    lost = [e.message for e in result.errors if "a continuous worker was lost" in e.message]
    assert len(lost) == 1, result.errors
    assert re.search(r"sent nothing for [3-9] s \(sparkstorm.worker.timeout.secs\)", lost[0])
    assert all(e.recovered for e in result.errors), result.errors
    assert result.stats["numbers"]["pending"] == 0
    assert result.stats["numbers"]["acked"] >= 2000


def test_a_bolt_that_kills_its_worker_in_prepare_ends_the_run_in_one_line(spark):
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(10))
    builder.set_bolt("dies", DiesInPrepare()).shuffle_grouping("numbers")
    conf = continuous(**FAST_RESTARTS, **{"sparkstorm.restart.max.failures": 2})
    started = time.monotonic()
    with pytest.raises(SparkStormError) as raised:
        run(builder.create_topology(), conf, engine="spark", spark=spark)
    said = str(raised.value)
    assert "\n" not in said, said
    assert said.startswith(
        "the continuous workers were lost 3 times in a row, each within 10 s "
        "of starting: a crash loop; giving up. The last loss: "
    ), said
    print(f"gave up after {time.monotonic() - started:.1f} s")
