"""An until-idle run ends once its spouts have been dry for the grace, counted from when
they ran dry: while the last trees complete, not after them, yet never before a spout
was asked again after its last outcome. Spouts that say they are exhausted (Storm's
``CompletableSpout``) end it without the grace, once every message had its outcome."""

from __future__ import annotations

import time

import pytest

from sparkstorm import CompletableSpout, Config, Fields, TopologyBuilder
from sparkstorm.topology.components import Bolt, Spout
from tests.conftest import run_on


class OneAtATime(Spout):
    """Emits its next number only once the one before was acked, as Trident's coordinator
    emits a batch once the one before is done: its calls in between emit nothing."""

    def __init__(self, count: int) -> None:
        self.count = count

    def open(self, conf, context, collector):
        self.collector, self.sent, self.waiting = collector, 0, False

    def next_tuple(self):
        if not self.waiting and self.sent < self.count:
            self.sent += 1
            self.waiting = True
            self.collector.emit([self.sent], msg_id=self.sent)

    def ack(self, msg_id):
        self.waiting = False

    def fail(self, msg_id, reason=None):
        self.sent -= 1
        self.waiting = False

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("number"))


class Slow(Bolt):
    """Acks each tuple after ``secs``: a tree longer than the grace."""

    def __init__(self, secs: float) -> None:
        self.secs = secs

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        time.sleep(self.secs)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


def topology(spout: Spout, secs: float, grace: float):
    builder = TopologyBuilder()
    builder.set_spout("numbers", spout)
    builder.set_bolt("slow", Slow(secs)).shuffle_grouping("numbers")
    conf = {Config.SPARKSTORM_IDLE_GRACE_SECS: grace, Config.TOPOLOGY_MESSAGE_TIMEOUT_SECS: 30}
    return builder.create_topology(), conf


@pytest.fixture(params=["local", "spark", "continuous"])
def mode(request: pytest.FixtureRequest) -> str:
    if request.param != "local":
        request.getfixturevalue("spark")
    return request.param


def test_a_spout_waiting_for_its_outcomes_is_asked_again_before_the_run_ends(mode, request):
    """Each tree takes twice the grace while the spout's calls emit nothing: taken for
    dry from those calls, the run would end after the first number."""
    spark = request.getfixturevalue("spark") if mode != "local" else None
    result = run_on(mode, *topology(OneAtATime(2), 0.4, grace=0.2), spark)
    assert result.stats["numbers"]["acked"] == 2, result.stats["numbers"]
    assert result.stats["numbers"]["failed"] == 0


def test_the_grace_runs_while_the_last_trees_complete(mode, request):
    """A spout dry once it emitted its one number, whose tree takes twice the grace: the
    run ends about when the tree does, not a grace after it."""
    grace = 0.5
    spark = request.getfixturevalue("spark") if mode != "local" else None
    started = time.monotonic()
    result = run_on(mode, *topology(OneAtATime(1), 2 * grace, grace), spark)
    assert result.stats["numbers"]["acked"] == 1
    after = time.monotonic() - started - result.startup_secs - result.elapsed_secs
    print(f"{mode}: {after:.3f} s after the last tree")
    assert after < grace, f"{after:.2f} s after the last tree, the grace being {grace} s"


class Numbers(Spout, CompletableSpout):
    """Emits 1..count; the first emit of ``fail_first`` asks the bolt to fail it, and the
    spout emits it again: exhausted only once that replay is out too."""

    def __init__(self, count: int, fail_first: int | None = None) -> None:
        self.count, self.fail_first = count, fail_first

    def open(self, conf, context, collector):
        self.collector, self.todo, self.replays = collector, list(range(1, self.count + 1)), 0

    def next_tuple(self):
        if self.todo:
            number = self.todo.pop(0)
            fail = number == self.fail_first and not self.replays
            self.collector.emit([number, fail], msg_id=number)

    def is_exhausted(self):
        return not self.todo

    def fail(self, msg_id, reason=None):
        self.replays += 1
        self.todo.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("number", "fail"))


class FailFlagged(Bolt):
    """Acks each tuple after ``secs``, failing those flagged ``fail``."""

    def __init__(self, secs: float = 0.0) -> None:
        self.secs = secs

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        time.sleep(self.secs)
        if tup.values[1]:
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


def exhausting(spout: Spout, grace: float, secs: float = 0.0):
    builder = TopologyBuilder()
    builder.set_spout("numbers", spout)
    builder.set_bolt("check", FailFlagged(secs)).shuffle_grouping("numbers")
    conf = {Config.SPARKSTORM_IDLE_GRACE_SECS: grace, Config.TOPOLOGY_MESSAGE_TIMEOUT_SECS: 30}
    return builder.create_topology(), conf


def test_exhausted_spouts_end_the_run_without_the_grace_once_replays_are_done(mode, request):
    """The grace is 60 s, so only exhaustion can end the run in time; a message whose
    tree fails and whose replay takes longer than a probe keeps the spout (and the run)
    going until the replay is acked: every message gets its outcome."""
    spark = request.getfixturevalue("spark") if mode != "local" else None
    started = time.monotonic()
    result = run_on(mode, *exhausting(Numbers(3, fail_first=2), grace=60.0, secs=0.2), spark)
    whole = time.monotonic() - started
    stats = result.stats["numbers"]
    assert (stats["acked"], stats["failed"]) == (3, 1), stats
    assert not result.errors, result.errors
    after = whole - result.startup_secs - result.elapsed_secs
    print(f"{mode}: whole {whole:.2f} s, {after:.3f} s after the run")
    assert whole < 30, f"the run took {whole:.1f} s: it waited for the 60 s grace"


class BrokenExhaustion(Numbers):
    def is_exhausted(self):
        msg = "cannot tell whether the numbers are out"
        raise ValueError(msg)


def test_an_is_exhausted_that_raises_is_reported_and_the_grace_ends_the_run(mode, request):
    spark = request.getfixturevalue("spark") if mode != "local" else None
    result = run_on(mode, *exhausting(BrokenExhaustion(2), grace=0.3), spark)
    assert result.stats["numbers"]["acked"] == 2
    errors = [e for e in result.errors if "cannot tell" in e.message]
    assert [(e.component, e.count) for e in errors] == [("numbers", 1)], result.errors
    assert "ValueError" in errors[0].message
