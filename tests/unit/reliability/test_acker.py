"""Every message ordering the acker must handle (STORM_SPEC.md 11-13, 22)."""

import numpy as np
import pytest

from sparkstorm import Config, Fields, TopologyBuilder
from sparkstorm._types import FailReason
from sparkstorm.config import resolve
from sparkstorm.tasks.task_runner import BoltTask
from sparkstorm.testing import FeederSpout
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.streams import (
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_HOLD_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    ACKER_RESET_TIMEOUT_STREAM_ID,
    FIELDS_BY_STREAM,
)
from sparkstorm.topology.tuple import Tuple, checkpoint_tuple, tick_tuple
from tests.scenarios.bolts import Ack

SPOUT_TASK = 7
REASON = FailReason("explicit", "b", 2)


class AckerHarness:
    def __init__(self):
        builder = TopologyBuilder()
        builder.set_spout("s", FeederSpout(Fields("x")))
        builder.set_bolt("b", Ack()).shuffle_grouping("s")
        plan = Plan(builder.create_topology(), resolve(Config()))
        self.task = BoltTask(plan, plan.acker_tasks[0], seed=0)
        self.task.prepare()
        self.now = 0.0
        self.step = 0

    def send(self, stream, *values):
        fields = FIELDS_BY_STREAM[stream]
        out = []
        self.step += 1
        self.task.run([Tuple(list(values), fields, "b", stream, 2)], self.step, self.now, out)
        return [(task, tup.source_stream, tup.values) for task, tup in out]

    def tick(self):
        out = []
        self.task.run([tick_tuple(30)], self.step, self.now, out)
        assert out == []

    def init(self, root, val):
        return self.send(ACKER_INIT_STREAM_ID, [root], [val], SPOUT_TASK)

    def ack(self, root, val):
        return self.send(ACKER_ACK_STREAM_ID, [root], [val])

    def fail(self, root):
        return self.send(ACKER_FAIL_STREAM_ID, root, REASON)

    def reset(self, root):
        return self.send(ACKER_RESET_TIMEOUT_STREAM_ID, root)

    @property
    def pending(self):
        return self.task.bolt.pending


@pytest.fixture
def acker():
    return AckerHarness()


def test_init_then_acks_complete(acker):
    assert acker.init(10, 0b1010) == []
    assert acker.ack(10, 0b1000) == []
    assert acker.ack(10, 0b0010) == [(SPOUT_TASK, ACKER_ACK_STREAM_ID, [[10], None])]
    assert len(acker.pending) == 0


def test_init_with_zero_value_completes_at_once(acker):
    assert acker.init(10, 0) == [(SPOUT_TASK, ACKER_ACK_STREAM_ID, [[10], None])]


def test_ack_before_init_is_kept(acker):
    assert acker.ack(10, 0b0110) == []
    assert acker.init(10, 0b0110) == [(SPOUT_TASK, ACKER_ACK_STREAM_ID, [[10], None])]


def test_fail_before_init_is_kept_and_decided_at_init(acker):
    assert acker.fail(10) == []
    assert acker.init(10, 0b1) == [(SPOUT_TASK, ACKER_FAIL_STREAM_ID, [[10], [REASON]])]
    assert len(acker.pending) == 0


def test_fail_after_init(acker):
    acker.init(10, 0b11)
    assert acker.fail(10) == [(SPOUT_TASK, ACKER_FAIL_STREAM_ID, [[10], [REASON]])]


def test_completion_wins_over_failure(acker):
    acker.fail(10)
    assert acker.init(10, 0) == [(SPOUT_TASK, ACKER_ACK_STREAM_ID, [[10], None])]


def test_messages_after_completion_make_an_orphan_that_expires_silently(acker):
    acker.init(10, 0b1)
    assert acker.ack(10, 0b1)[0][1] == ACKER_ACK_STREAM_ID
    assert acker.ack(10, 0b100) == []  # orphan: no spout task, no decision
    assert acker.fail(10) == []
    assert len(acker.pending) == 1
    for _ in range(3):
        acker.tick()
    assert len(acker.pending) == 0


def test_double_ack_never_completes_the_tree(acker):
    acker.init(10, 0b101)
    assert acker.ack(10, 0b101) != []  # completes...
    acker.init(11, 0b11)
    acker.ack(11, 0b1)
    acker.ack(11, 0b1)  # ...but acking the same edge twice cancels out
    assert acker.pending.vals[acker.pending.find(np.array([11], np.uint64))[0]] == 0b11
    for _ in range(3):
        acker.tick()
    assert len(acker.pending) == 0  # expired: the spout times it out


def test_reset_is_forwarded_to_the_spout_and_refreshes_expiry(acker):
    acker.init(10, 0b1)
    acker.tick()
    acker.tick()
    assert acker.reset(10) == [(SPOUT_TASK, ACKER_RESET_TIMEOUT_STREAM_ID, [[10], None])]
    acker.tick()
    acker.tick()
    assert (
        acker.pending.find(np.array([10], np.uint64))[0] >= 0
    )  # 2 ticks after the reset: still there


def test_reset_before_init_sends_nothing(acker):
    assert acker.reset(10) == []


def test_entries_expire_after_three_ticks_without_activity(acker):
    acker.init(10, 0b1)
    acker.tick()
    acker.tick()
    assert acker.pending.find(np.array([10], np.uint64))[0] >= 0
    acker.tick()
    assert acker.pending.find(np.array([10], np.uint64))[0] < 0
    assert acker.ack(10, 0b1) == []  # a late ack finds nothing: orphan, no outcome


def test_a_batch_applies_orderings_and_ticks_in_sequence(acker):
    def msg(stream, *values):
        return Tuple(list(values), FIELDS_BY_STREAM[stream], "b", stream, 2)

    out = []
    acker.task.run(
        [
            msg(ACKER_ACK_STREAM_ID, [1], [0b11]),  # ack before init, same batch
            msg(ACKER_INIT_STREAM_ID, [1], [0b11], SPOUT_TASK),
            msg(ACKER_FAIL_STREAM_ID, 2, REASON),  # fail before init, same batch
            msg(ACKER_INIT_STREAM_ID, [2, 3], [0b1, 0b1], SPOUT_TASK),  # 3 stays pending
            tick_tuple(30),
            tick_tuple(30),
            tick_tuple(30),  # ...and expires here
            msg(ACKER_ACK_STREAM_ID, [3], [0b1]),  # late: an orphan, no outcome
        ],
        1,
        0.0,
        out,
    )
    outcomes = sorted((t.source_stream, t.values[0]) for _, t in out)
    assert outcomes == [(ACKER_ACK_STREAM_ID, [1]), (ACKER_FAIL_STREAM_ID, [2])]
    assert len(acker.pending) == 1  # the orphan of root 3


def test_batches_of_many_roots_from_several_spout_tasks(acker):
    def msg(stream, *values):
        return Tuple(list(values), FIELDS_BY_STREAM[stream], "b", stream, 2)

    out = []
    roots = np.array([2**64 - 1, 5, 6, 7], np.uint64)
    acker.task.run(
        [
            msg(ACKER_INIT_STREAM_ID, roots[:2], np.array([3, 4], np.uint64), SPOUT_TASK),
            msg(ACKER_INIT_STREAM_ID, roots[2:], np.array([8, 9], np.uint64), SPOUT_TASK + 1),
            # the same root twice in one batch XORs both in: 4 ^ 1 ^ 5 == 0
            msg(ACKER_ACK_STREAM_ID, roots, np.array([3, 1, 8, 1], np.uint64)),
            msg(ACKER_ACK_STREAM_ID, [5], [5]),
        ],
        1,
        0.0,
        out,
    )
    outcomes = sorted((task, t.source_stream, sorted(t.values[0])) for task, t in out)
    assert outcomes == [
        (SPOUT_TASK, ACKER_ACK_STREAM_ID, [5, 2**64 - 1]),
        (SPOUT_TASK + 1, ACKER_ACK_STREAM_ID, [6]),
    ]
    assert len(acker.pending) == 1  # root 7: 9 ^ 1 != 0
    assert acker.task.stats.executed == 9  # roots named by the 4 messages, as Storm counts


def test_statistics_count_messages_acked_and_outcomes_emitted(acker):
    acker.init(10, 0b1010)
    acker.init(11, 0b1)
    acker.ack(10, 0b1010)
    acker.fail(11)
    stats = acker.task.stats
    assert (stats.acked, stats.emitted) == (4, 2)  # four messages, two outcomes


class StatefulAckerHarness(AckerHarness):
    """An acker of a topology with stateful bolts: held acks wait for a commit."""

    def __init__(self):
        super().__init__()
        self.task.bolt.stateful = True
        self.task.bolt.prepare(self.task.conf, self.task.context, self.task.collector)

    def hold(self, root, val):
        return self.send(ACKER_HOLD_STREAM_ID, [root], [val])

    def checkpoint(self, action, txid=0):
        out = []
        self.task.run([checkpoint_tuple(action, txid)], self.step, self.now, out)
        return [(task, tup.source_stream, tup.values) for task, tup in out]


def test_a_tree_with_held_acks_completes_only_at_the_commit():
    acker = StatefulAckerHarness()
    acker.init(1, 0b110)
    assert acker.ack(1, 0b100) == []
    assert acker.hold(1, 0b010) == []  # every tuple acked, one ack held: ready
    assert acker.task.bolt.unready == 0 and len(acker.pending) == 1
    acker.checkpoint("prepare")
    assert acker.checkpoint("commit") == [(SPOUT_TASK, ACKER_ACK_STREAM_ID, [[1], None])]
    assert len(acker.pending) == 0


def test_a_commit_completes_only_the_trees_ready_at_its_prepare():
    acker = StatefulAckerHarness()
    acker.init(1, 0b1)
    acker.init(2, 0b1)
    acker.hold(1, 0b1)
    acker.checkpoint("prepare")
    acker.hold(2, 0b1)  # ready after the cut: its effect is not in this checkpoint
    assert acker.checkpoint("commit") == [(SPOUT_TASK, ACKER_ACK_STREAM_ID, [[1], None])]
    assert len(acker.pending) == 1


def test_failing_a_tree_that_changed_state_counts_a_state_failure():
    acker = StatefulAckerHarness()
    acker.init(1, 0b11)
    acker.init(2, 0b11)
    acker.hold(1, 0b01)
    acker.ack(2, 0b01)
    acker.fail(1)  # a stateful bolt acked part of it: its effect must be rolled back
    acker.fail(2)  # no stateful bolt saw it: nothing to undo
    assert acker.task.bolt.state_failures == 1
    acker.hold(2, 0b10)  # a held ack after the tree was decided: it changed state too
    assert acker.task.bolt.state_failures == 2


def test_a_rollback_forgets_every_pending_tree():
    acker = StatefulAckerHarness()
    acker.init(1, 0b1)
    acker.checkpoint("rollback")
    assert len(acker.pending) == 0
