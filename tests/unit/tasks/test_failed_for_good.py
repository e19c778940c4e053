"""A message failed, then acked on its replay, is no failure for good (the exit code).

A broker redelivers a message under a new delivery tag, so a spout's replay may come
under another msg id; its ``message_key`` names the message in both.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sparkstorm import Bolt, Fields, Spout, TopologyBuilder, run
from sparkstorm.tasks import spout_task
from sparkstorm.tasks.spout_task import SpoutTask


class Redelivering(Spout):
    """Emits messages 0..n-1 once; a failed one comes again under a new msg id (its tag)."""

    def __init__(self, n: int, keyed: bool) -> None:
        self.n, self.keyed = n, keyed

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector, self.todo, self.tag = collector, list(range(self.n)), 0

    def next_tuple(self) -> None:
        if self.todo:
            number = self.todo.pop()
            self.tag += 1
            self.collector.emit([number, self.tag], msg_id=(self.tag, number))

    def message_key(self, msg_id: Any) -> int | None:
        return msg_id[1] if self.keyed else None

    def fail(self, msg_id: Any, reason: Any = None) -> None:
        self.todo.append(msg_id[1])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("number", "tag"))


class FailsFirstDeliveries(Bolt):
    """Fails the first delivery of every even number, acks the rest."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector, self.seen = collector, set()

    def execute(self, tup: Any) -> None:
        number = tup.values[0]
        if number % 2 == 0 and number not in self.seen:
            self.seen.add(number)
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def spout_stats(keyed: bool) -> dict[str, Any]:
    builder = TopologyBuilder()
    builder.set_spout("deliveries", Redelivering(10, keyed))
    builder.set_bolt("check", FailsFirstDeliveries()).shuffle_grouping("deliveries")
    result = run(builder.create_topology(), {}, "local", until_idle=True, name="redelivered")
    return result.stats["deliveries"]


def test_a_replay_under_a_new_msg_id_with_the_same_message_key_was_replayed():
    stats = spout_stats(keyed=True)
    assert stats["acked"] == 10 and stats["failed"] == 5
    assert stats["failed_for_good"] == {} and stats["replayed_acked"] == 5


def test_without_a_message_key_a_new_msg_id_is_another_message():
    stats = spout_stats(keyed=False)  # nothing says the replays are the same messages
    assert stats["failed_for_good"] == {"explicit": 5} and stats["replayed_acked"] == 0


def noted(failed_last: dict[Any, str]) -> dict[Any, str]:
    """The failed keys a continuous spout task's report would carry."""
    task = SimpleNamespace(_failed_last=failed_last, stats=SimpleNamespace())
    SpoutTask.note_failed_keys(task)  # type: ignore[arg-type]
    return task.stats.failed_keys


def test_a_report_carries_the_failed_keys_that_surely_pickle_up_to_a_bound(monkeypatch):
    keys = {"m1": "explicit", 7: "timeout", ("orders", 3, 41): "rollback", b"k": "explicit"}
    assert noted(keys) == keys
    odd = {object(): "explicit", ("orders", object()): "timeout", 2.5: "explicit"}
    assert noted({**odd, 7: "timeout"}) == {7: "timeout"}  # the rest stay counted
    monkeypatch.setattr(spout_task, "FAILED_KEYS_CARRIED", 3)
    assert noted({n: "explicit" for n in range(5)}) == {0: "explicit", 1: "explicit", 2: "explicit"}
