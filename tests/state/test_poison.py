"""A message whose processing makes a rollback necessary is retried like any failure, then
given up, and only it: the others replay without an attempt counted, and the run ends.

One test per cause (a value the state cannot store, a stateful bolt that raises on it, a
stateful window that always raises), each on every engine and mode.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from sparkstorm import Count, Fields, Spout, StatefulBolt, StatefulWindowedBolt, TopologyBuilder
from sparkstorm._types import counts_as_attempt
from tests.conftest import run_on
from tests.state.test_exactly_once import conf_for

N, POISON, RAISES, MAX_RETRIES = 12, 5, 8, 2


class GivingUpSpout(Spout):
    """Emits 0..N-1; replays a failure, but gives a message up after ``max_retries``
    retries that were its own failures (a rollback's are not), as the connectors do."""

    def __init__(self, max_retries: int = MAX_RETRIES) -> None:
        self.max_retries = max_retries

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.queue = list(range(N))
        self.attempts: dict[int, int] = {}

    def next_tuple(self) -> None:
        if self.queue:
            n = self.queue.pop(0)
            self.collector.emit([n], msg_id=n)

    def fail(self, msg_id: int, reason: Any = None) -> None:
        if counts_as_attempt(reason):
            self.attempts[msg_id] = self.attempts.get(msg_id, 0) + 1
            if self.attempts[msg_id] > self.max_retries:
                return  # dead-lettered
        self.queue.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("n"))


class Tally(StatefulBolt):
    """Counts each number in its state; stores a lock for ``POISON``, raises on ``RAISES``."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        n = tup.values[0]
        self.state.put(n, self.state.get(n, 0) + 1)
        if n == POISON:
            self.state.put(("lock", n), threading.Lock())
        if n == RAISES:
            msg = f"{n} is poison"
            raise ValueError(msg)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


class NeverAcksThePoison(Tally):
    """Counts, and never acks (nor fails) the poison number: its tree never completes."""

    def execute(self, tup: Any) -> None:
        n = tup.values[0]
        self.state.put(n, self.state.get(n, 0) + 1)
        if n != POISON:
            self.collector.ack(tup)


class AlwaysRaises(StatefulWindowedBolt):
    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, window: Any) -> None:
        msg = f"window of {len(window)} raised"
        raise RuntimeError(msg)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def run_with(
    engine: str, bolt: Any, tmp_path: Any, timeout: float = 30, max_retries: int = MAX_RETRIES
) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("numbers", GivingUpSpout(max_retries))
    builder.set_bolt("tally", bolt, 2).shuffle_grouping("numbers")
    provider = ("directory", {"path": str(tmp_path / "state")})
    name = f"poison-{uuid.uuid4().hex[:8]}"
    conf = conf_for(provider, **{"topology.message.timeout.secs": timeout})
    return run_on(engine, builder.create_topology(), conf, name=name, until_idle=True, duration=90)


ENGINES = pytest.mark.parametrize("engine", ["local", "spark", "continuous"], indirect=True)


@ENGINES
def test_poison_messages_are_retried_max_retries_times_then_given_up_alone(engine, tmp_path):
    """Two causes in one run: a value the state cannot store, and an input that raises."""
    result = run_with(engine, Tally(), tmp_path)
    spout = result.stats["numbers"]
    assert spout["acked"] == N - 2  # every other message, however often it was rolled back
    assert spout["fail_reasons"]["error"] == 2 * (MAX_RETRIES + 1)  # the poisons' own
    assert spout["failed"] == spout["fail_reasons"]["error"] + spout["fail_reasons"].get(
        "rollback", 0
    )
    errors = [e.message for e in result.errors if e.component == "tally"]
    assert any(
        f"state value of key ('lock', {POISON}) is a _thread.lock, which the pickle "
        f"serializer cannot store" in message
        for message in errors
    ), errors
    assert any(f"ValueError: {RAISES} is poison" in message for message in errors), errors


@ENGINES
def test_a_window_that_always_raises_gives_its_messages_up_and_the_run_ends(engine, tmp_path):
    result = run_with(engine, AlwaysRaises().with_tumbling_window(Count(3)), tmp_path)
    spout = result.stats["numbers"]
    # each of the two tasks may end with up to two tuples in a window that never fills:
    # they are acked (after up to MAX_RETRIES failures in earlier windows); every other
    # message is given up after its 3 attempts
    acked, given_up = spout["acked"], N - spout["acked"]
    assert acked <= 4
    assert given_up * 3 <= spout["fail_reasons"]["error"] <= given_up * 3 + acked * MAX_RETRIES
    assert any("window of 3 raised" in e.message for e in result.errors)


@ENGINES
def test_a_tree_that_never_completes_stalls_one_drain_not_every_tree(engine, tmp_path):
    """Its checkpoint's drain waits a third of the timeout, then the ackers name it:
    it fails as timed out, an attempt; the trees whose acks waited behind it replay
    without one, and none times out (before, every one of them did)."""
    timeout = 15 if engine == "spark" else 6  # a superstep drain takes seconds under load
    result = run_with(engine, NeverAcksThePoison(), tmp_path, timeout=timeout, max_retries=1)
    spout = result.stats["numbers"]
    assert spout["acked"] == N - 1
    assert spout["fail_reasons"]["timeout"] == 2  # the poison's two attempts, no other
    assert set(spout["fail_reasons"]) <= {"timeout", "rollback"}
