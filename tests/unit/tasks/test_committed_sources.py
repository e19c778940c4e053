"""The source keys a checkpoint records, and what a restarted run skips and carries."""

from __future__ import annotations

from typing import Any

from sparkstorm import Config, Fields, Spout, TopologyBuilder
from sparkstorm._types import ROLLBACK
from sparkstorm.config import resolve
from sparkstorm.tasks.committed_sources import CommittedSources, sealed_keys
from sparkstorm.tasks.spout_task import SpoutTask
from sparkstorm.topology.plan import Plan
from tests.scenarios.bolts import Ack


class Keyed(Spout):
    """Emits what it is told to; the msg id is the key (a tuple: a bad key)."""

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector, self.acked, self.queue = collector, [], []

    def next_tuple(self) -> None:
        if self.queue:
            self.collector.emit(["x"], msg_id=self.queue.pop(0))

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def message_key(self, msg_id: Any) -> Any:
        return msg_id

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("x"))


def spout_task() -> SpoutTask:
    builder = TopologyBuilder()
    builder.set_spout("in", Keyed())
    builder.set_bolt("ack", Ack()).shuffle_grouping("in")
    plan = Plan(builder.create_topology(), resolve({Config.SPARKSTORM_SEED: 3}))
    task = SpoutTask(plan, plan.component_tasks("in")[0], seed=3)
    task.open()
    return task


def test_a_restart_skips_committed_messages_and_carries_their_keys_one_commit_more():
    task = spout_task()
    sources = CommittedSources({"in": ["a", "b"]}, carry_secs=30)
    task.skip_committed(sources)
    task.begin(0, 0.0)
    assert task.collector.emit(["x"], msg_id="a") == []  # committed already: acked
    task.collector.emit(["x"], msg_id="c")
    assert task.spout.acked == ["a"] and task.stats.skipped_committed == 1
    assert [tup.values for _, tup in task.drain() if tup.source_stream == "default"] == [["x"]]
    task.seal()
    # "c" completes with this commit; "b" was not seen again; "a" was, and its ack may
    # not have reached the source yet: all three are recorded
    recorded = sources.commit(sealed_keys([task]), now=1)
    assert {k: sorted(v) for k, v in recorded.items()} == {"in": ["a", "b", "c"]}
    task.ack_sealed(1)
    assert task.spout.acked == ["a", "c"]
    assert sources.commit(sealed_keys([task]), now=2) == {
        "in": ["b"]
    }  # "a" acked a commit ago: dropped
    task.begin(1, 3.0)
    assert task.collector.emit(["x"], msg_id="b") == [] and task.spout.acked == ["a", "c", "b"]
    assert sources.commit(sealed_keys([task]), now=4) == {"in": ["b"]}  # seen: kept one commit more
    assert sources.commit(sealed_keys([task]), now=5) == {}


def test_carried_keys_expire_after_the_message_timeout():
    sources = CommittedSources({"in": ["a"]}, carry_secs=30)
    assert sources.commit({}, now=29) == {"in": ["a"]}
    assert sources.commit({}, now=30) == {}
    assert not sources.skips("in", "a")


def test_a_key_that_is_not_str_or_int_is_reported_naming_the_spout():
    task = spout_task()
    task.skip_committed(CommittedSources({"in": ["a"]}, carry_secs=30))
    task.begin(0, 0.0)
    task.collector.emit(["x"], msg_id=("not", "a key"))  # emitted: no key, no skip
    [error] = task.collector.errors
    assert "Keyed.message_key(('not', 'a key')) returned" in error.message
    assert "return a str, an int or None" in error.message
    assert task.pending.size() == 1


def test_a_batch_goes_on_past_skipped_messages():
    """A restart whose first messages are all committed is not idle: it takes the rest."""
    task = spout_task()
    task.skip_committed(CommittedSources({"in": ["a", "b", "c"]}, carry_secs=30))
    task.spout.queue = ["a", "b", "c", "d", "e"]
    task.begin(0, 0.0)
    assert task.next_batch(10) == 5  # three acked as committed, two emitted
    assert task.spout.acked == ["a", "b", "c"] and task.pending.size() == 2


def test_sealed_trees_wait_for_their_checkpoint_instead_of_timing_out():
    """A prepared checkpoint decides the trees pending at its prepare: commit acks them."""
    task = spout_task()
    task.spout.queue = ["old", "sealed"]
    task.begin(0, 0.0)
    task.next_batch(1)
    task.tick()  # "old" is a rotation old
    task.next_batch(1)
    task.seal()
    task.spout.queue = ["after"]
    task.next_batch(1)  # emitted after the prepare: not the checkpoint's
    task.tick()
    task.tick()  # everything is two rotations old: only what is not sealed times out
    assert task.stats.fail_reasons == {"timeout": 1}
    assert sorted(msg_id for _, (msg_id, *_) in task.pending.items()) == ["old", "sealed"]
    task.ack_sealed(5.0)
    assert sorted(task.spout.acked) == ["old", "sealed"] and task.pending.size() == 0
    assert task.sealed == set()


def test_a_rollback_fails_sealed_trees_and_unseals():
    task = spout_task()
    task.spout.queue = ["a"]
    task.begin(0, 0.0)
    task.next_batch(1)
    task.seal()
    task.fail_pending(ROLLBACK)
    assert task.stats.fail_reasons == {"rollback": 1} and task.sealed == set()
    task.ack_sealed(1.0)  # a commit after a rollback finds nothing of its own to ack
    assert task.spout.acked == []
