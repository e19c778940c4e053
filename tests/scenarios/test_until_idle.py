"""An until-idle run ends once its spouts have been dry for the grace, counted from when
they ran dry: while the last trees complete, not after them, yet never before a spout
was asked again after its last outcome."""

from __future__ import annotations

import time

import pytest

from sparkstorm import Config, Fields, TopologyBuilder
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
