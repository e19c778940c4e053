"""The continuous mode's data plane without Spark: the same workers, sockets and frames,
each worker a thread (engines/continuous/threads.py)."""

from __future__ import annotations

import time

from examples.word_count import SENTENCES, SentenceSpout, SplitSentence, WordCount
from sparkstorm import Config, Fields, TopologyBuilder
from sparkstorm.control.continuous import ContinuousRuntime
from sparkstorm.engines.continuous.driver import ContinuousEngine
from sparkstorm.engines.continuous.threads import ThreadLauncher
from tests.continuous.components import InOrder, NumberSpout


def run_in_threads(topology, workers: int = 3, conf: Config | None = None) -> ContinuousRuntime:
    engine = ContinuousEngine(ThreadLauncher(), "127.0.0.1", workers)
    runtime = ContinuousRuntime("threads", topology, conf or Config(), engine)
    deadline = time.monotonic() + 60
    while not runtime.idle():
        runtime.step()
        assert time.monotonic() < deadline, runtime.busy_with()
    runtime.kill(drain_secs=5, wait_pending=True)
    return runtime


def test_word_count_over_three_workers_acks_every_sentence():
    sentences = SENTENCES * 100
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(sentences), 2)
    builder.set_bolt("split", SplitSentence(), 3).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCount(), 3).fields_grouping("split", Fields("word"))
    runtime = run_in_threads(builder.create_topology())
    stats = runtime.stats()
    assert runtime.errors == []
    assert (stats["sentences"]["acked"], stats["sentences"]["failed"]) == (len(sentences), 0)
    assert stats["count"]["executed"] == sum(len(s.split()) for s in sentences)
    tasks = runtime.task_stats()
    assert {row["worker"] for rows in tasks.values() for row in rows} == {0, 1, 2}


def test_every_sender_receiver_pair_keeps_its_order_across_workers():
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(30_000), 3)
    builder.set_bolt("check", InOrder(), 4).shuffle_grouping("numbers")
    runtime = run_in_threads(builder.create_topology())
    assert runtime.errors == []
    assert runtime.stats()["numbers"]["acked"] == 30_000


def test_a_shutdown_fails_what_is_pending_with_reason_shutdown():
    from tests.continuous.components import HoldUntilTick

    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(5, replay=False))
    builder.set_bolt("hold", HoldUntilTick(most=100)).global_grouping("numbers")
    engine = ContinuousEngine(ThreadLauncher(), "127.0.0.1", 2)
    runtime = ContinuousRuntime("stop", builder.create_topology(), Config(), engine)
    deadline = time.monotonic() + 30
    while runtime.pending_count() < 5:  # no tick: the bolt holds all five
        runtime.step()
        assert time.monotonic() < deadline, runtime.busy_with()
    runtime.kill(drain_secs=0.2, wait_pending=True)
    spout = runtime.stats()["numbers"]
    assert (spout["acked"], spout["failed"], spout["fail_reasons"]) == (0, 5, {"shutdown": 5})


def test_a_stop_just_after_an_idle_verdict_still_waits_for_the_last_emit():
    """The driver reuses an idle verdict for 50 ms. A stop in that window read "idle,
    nothing pending" from before a spout's last emit, ended the drain at once, and failed
    a tree that a sink's next tick would have completed (a graceful stop's next run then
    wrote that row again: seen beside a busy core)."""
    from tests.continuous.components import ASKED, EMITTED, EmitsWhenAsked, HoldUntilTick

    ASKED.clear()
    EMITTED.clear()
    builder = TopologyBuilder()
    builder.set_spout("one", EmitsWhenAsked())
    builder.set_bolt("hold", HoldUntilTick(most=1)).global_grouping("one").add_configuration(
        "topology.tick.tuple.freq.secs", 1
    )
    engine = ContinuousEngine(ThreadLauncher(), "127.0.0.1", 2)
    runtime = ContinuousRuntime("late", builder.create_topology(), Config(), engine)
    deadline = time.monotonic() + 30
    while not runtime.idle():
        runtime.step()
        assert time.monotonic() < deadline, runtime.busy_with()
    ASKED.set()  # the verdict is fresh: the emit comes right after it
    assert EMITTED.wait(5)
    runtime.kill(drain_secs=10, wait_pending=True)
    spout = runtime.stats()["one"]
    assert (spout["acked"], spout["failed"]) == (1, 0), spout


def test_what_a_worker_reports_while_another_still_starts_reaches_the_driver(monkeypatch):
    """A spout that cannot reach its broker says so at ``open``: the report must reach the
    driver whichever worker starts last, or an until-idle run ends with no error at all
    (exit 0 for a source that was never reached). Workers wait for every hello before
    they open their spouts (the driver then sends the peers' addresses)."""
    from sparkstorm.engines.continuous.worker import Worker
    from tests.continuous.components import UnreachableSource

    hello = Worker.hello

    def late_hello(self, address, control):
        if self.index == 1:
            time.sleep(1.0)  # a worker slow to start
        hello(self, address, control)

    monkeypatch.setattr(Worker, "hello", late_hello)
    builder = TopologyBuilder()
    builder.set_spout("source", UnreachableSource(), 2)
    builder.set_bolt("check", InOrder()).shuffle_grouping("source")
    runtime = run_in_threads(builder.create_topology(), workers=2)
    said = sorted(e.message for e in runtime.errors)
    spout_tasks = runtime.plan.component_tasks("source")
    assert said == [f"ConnectionError: task {t}: 127.0.0.1:9 refused" for t in spout_tasks]
    assert {runtime.plan.worker_of[t] for t in spout_tasks} == {0, 1}


def test_a_host_gone_for_good_leaves_the_run_on_the_workers_it_can_still_get(tmp_path):
    """A worker is lost and the cluster now has one task slot, not two: the restart
    places every task over one worker rather than wait for a slot that will not come."""
    from tests.continuous.components import KillsItsWorkerOnce

    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(2000))
    killer = KillsItsWorkerOnce(str(tmp_path), [500], in_thread=True)
    builder.set_bolt("killer", killer, 2).shuffle_grouping("numbers")
    conf = Config()
    conf["sparkstorm.restart.delay.initial.secs"] = 0.1
    launcher = ThreadLauncher()
    engine = ContinuousEngine(launcher, "127.0.0.1", 2)
    runtime = ContinuousRuntime("shrinks", builder.create_topology(), conf, engine)
    assert runtime.engine.workers == 2
    launcher.available = 1  # the second host is gone
    deadline = time.monotonic() + 60
    while not (runtime.restarts.count and not runtime.restarting and runtime.idle()):
        runtime.step()
        assert time.monotonic() < deadline, runtime.busy_with()
    runtime.kill(drain_secs=5, wait_pending=True)
    assert runtime.engine.workers == 1
    assert set(runtime.plan.worker_of.values()) == {0}  # every task placed on the one
    assert runtime.restarts.count == 1
    assert runtime.stats()["numbers"]["acked"] >= 2000  # the last attempt acked them all


def test_a_first_start_that_fails_is_a_loss_like_any_other_and_the_run_goes_on(monkeypatch):
    from sparkstorm.engines.continuous.worker import Worker

    hello = Worker.hello

    def fails_first(self, address, control):
        if self.attempt == 0 and self.index == 1:
            msg = "the host went away while the stage started"
            raise ConnectionError(msg)
        hello(self, address, control)

    monkeypatch.setattr(Worker, "hello", fails_first)
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(500))
    builder.set_bolt("check", InOrder(), 2).shuffle_grouping("numbers")
    conf = Config()
    conf["sparkstorm.restart.delay.initial.secs"] = 0.1
    runtime = run_in_threads(builder.create_topology(), workers=2, conf=conf)
    assert runtime.restarts.count == 1
    (lost,) = [e.message for e in runtime.errors]
    assert "failed to start: the host went away" in lost and "(attempt 2) in 0.1 s" in lost
    assert runtime.stats()["numbers"]["acked"] == 500


def until_idle(runtime: ContinuousRuntime, grace: float, limit: float = 30) -> float:
    """run.py's until-idle loop: seconds until idle with nothing pending for ``grace``."""
    started, quiet_since = time.monotonic(), None
    while time.monotonic() - started < limit:
        runtime.step()
        if runtime.idle() and not runtime.pending_count():
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= grace:
                break
        else:
            quiet_since = None
    return time.monotonic() - started


def test_a_slow_source_is_not_taken_for_idle_between_its_tuples():
    """One tuple every 150 ms for 2 s, each done in a millisecond: almost every probe
    finds the workers quiet. An until-idle run ended after the grace period while the
    source still sent (seen on a stream of 50 entries a second): idle needs the same
    counters across the whole grace period, not within one probe."""
    from tests.continuous.components import Trickle

    builder = TopologyBuilder()
    builder.set_spout("slow", Trickle(0.15, 2.0))
    builder.set_bolt("check", InOrder()).shuffle_grouping("slow")
    engine = ContinuousEngine(ThreadLauncher(), "127.0.0.1", 2)
    runtime = ContinuousRuntime("slow", builder.create_topology(), Config(), engine)
    ended = until_idle(runtime, grace=0.5)
    runtime.kill(drain_secs=5, wait_pending=True)
    assert runtime.stats()["slow"]["acked"] >= 13, runtime.stats()["slow"]
    assert ended >= 2.0, f"taken for idle after {ended:.2f} s, while the source still sent"


def test_a_bolt_ticking_fast_does_not_keep_a_finished_run_from_idle():
    """Ticks every 50 ms move a worker's counters between every two verdicts: they are
    no work, and a finished run still ends (a Kafka sink ticks every 100 ms)."""
    from tests.continuous.components import HoldUntilTick

    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(50))
    builder.set_bolt("hold", HoldUntilTick(most=1000)).shuffle_grouping(
        "numbers"
    ).add_configuration("topology.tick.tuple.freq.secs", 0.05)
    engine = ContinuousEngine(ThreadLauncher(), "127.0.0.1", 2)
    runtime = ContinuousRuntime("ticks", builder.create_topology(), Config(), engine)
    ended = until_idle(runtime, grace=0.5, limit=20)
    runtime.kill(drain_secs=5, wait_pending=True)
    assert runtime.stats()["numbers"]["acked"] == 50
    assert ended < 15, "a run whose bolt ticks never went idle"


def test_the_workers_get_the_plan_from_the_driver_and_a_replaced_attempt_gets_none():
    """A spout's data is not pickled into what starts a worker (a Spark task, copied
    through the JVM and kept by every worker): each worker asks the driver for the plan
    on the run's socket. A worker of an attempt replaced since is told there is none."""
    import threading
    from dataclasses import replace

    import zmq

    from sparkstorm.engines.continuous.driver import fetch_plan
    from sparkstorm.tasks.pickling import dumps

    sentences = [f"{s} {i}" for i in range(20_000) for s in SENTENCES[:2]]
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(sentences))
    builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
    engine = ContinuousEngine(ThreadLauncher(), "127.0.0.1", 2)
    runtime = ContinuousRuntime("plan", builder.create_topology(), Config(), engine)
    assert len(dumps(runtime.plan)) > 1_000_000
    assert len(dumps(engine._setup)) < 20_000, "the plan travels with the workers' setup"

    stale, answers = replace(engine._setup, attempt=engine._setup.attempt - 1), []
    context: zmq.Context = zmq.Context()
    asking = threading.Thread(target=lambda: answers.append(fetch_plan(stale, 0, context)))
    asking.start()
    deadline = time.monotonic() + 60
    while not runtime.idle():
        runtime.step()
        assert time.monotonic() < deadline, runtime.busy_with()
    asking.join(10)
    runtime.kill(drain_secs=5, wait_pending=True)
    context.term()
    assert answers == [None]
    assert runtime.stats()["sentences"]["acked"] == len(sentences)


def test_a_slow_local_bolt_does_not_hold_back_what_another_worker_waits_for():
    """A worker runs its tasks in one loop, and sends what is for other workers once a
    frame fills or its first tuple waited 1 ms, between turns. A bolt that takes long
    held that back: each partition of a Trident commit waited for the one before it to
    write. Before a bolt that took longer than that runs, what waits goes out."""
    from tests.continuous.components import SLOW_STARTS, SlowEcho

    SLOW_STARTS.clear()
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(4, replay=False))
    builder.set_bolt("slow", SlowEcho(0.3), 2).all_grouping("numbers")
    conf = Config()
    conf[Config.TOPOLOGY_MAX_SPOUT_PENDING] = 1  # one number at a time
    runtime = run_in_threads(builder.create_topology(), workers=2, conf=conf)
    assert runtime.stats()["numbers"]["acked"] == 4
    starts: dict[int, list[float]] = {}
    for number, _, began in SLOW_STARTS:
        starts.setdefault(number, []).append(began)
    # the first number finds the local task's time unknown; the others do not wait for it
    lags = [max(s) - min(s) for n, s in sorted(starts.items()) if n > 0]
    assert len(lags) == 3 and max(lags) < 0.15, lags
