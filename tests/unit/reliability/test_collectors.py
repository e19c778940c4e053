"""The bolt and spout collectors' edge and ack-val arithmetic (STORM_SPEC.md 3-10)."""

from functools import reduce
from operator import xor

import numpy as np

from sparkstorm import Bolt, Config, Fields, TopologyBuilder
from sparkstorm.config import resolve
from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.reliability.ids import id_source
from sparkstorm.reliability.spout_collector import SpoutOutputCollector
from sparkstorm.testing import FeederSpout
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.streams import ACKER_ACK_STREAM_ID, ACKER_INIT_STREAM_ID
from sparkstorm.topology.tuple import Tuple


class Out(Bolt):
    def execute(self, tup):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("v"))


class Tracker:
    def __init__(self):
        self.tracked, self.acked = [], []

    def track(self, root, msg_id, stream):
        self.tracked.append((root, msg_id))

    def ack_untracked(self, msg_id):
        self.acked.append(msg_id)


def make_plan(ackers=1, tasks=3):
    builder = TopologyBuilder()
    builder.set_spout("s", FeederSpout(Fields("v")))
    builder.set_bolt("a", Out(), tasks).all_grouping("s")
    builder.set_bolt("b", Out()).shuffle_grouping("a")
    c = Config()
    c.set_num_ackers(ackers)
    return Plan(builder.create_topology(), resolve(c))


def test_spout_emit_sends_init_with_xor_of_edges():
    plan = make_plan()
    tracker = Tracker()
    spout_task = plan.component_tasks("s")[0]
    c = SpoutOutputCollector(plan, spout_task, tracker)
    out = []
    c.begin(out, id_source(0, 0, spout_task), 0.0, 0)
    targets = c.emit(["x"], msg_id="m")
    assert targets == plan.component_tasks("a")
    assert [tup.source_stream for _, tup in out] == ["default"] * len(targets)
    c.flush_inits()  # inits leave as one batch per acker task when the superstep ends
    data = [tup for task, tup in out if tup.source_stream == "default"]
    (init,) = [tup for task, tup in out if tup.source_stream == ACKER_INIT_STREAM_ID]
    (root,) = init.values[0].tolist()
    assert tracker.tracked == [(root, "m")]
    assert all(list(t.anchors_to_ids) == [root] for t in data)
    assert init.values[1].tolist() == [reduce(xor, (t.anchors_to_ids[root] for t in data))]
    assert init.values[2] == spout_task


def test_spout_emit_without_ackers_acks_inside_emit():
    plan = make_plan(ackers=0)
    tracker = Tracker()
    c = SpoutOutputCollector(plan, plan.component_tasks("s")[0], tracker)
    out = []
    c.begin(out, id_source(0, 0, 1), 0.0, 0)
    c.emit(["x"], msg_id="m")
    assert tracker.acked == ["m"] and tracker.tracked == []
    assert all(tup.anchors_to_ids is None for _, tup in out)


def test_bolt_emit_and_ack_arithmetic_cancels_out():
    plan = make_plan()
    task = plan.component_tasks("a")[0]
    c = OutputCollector(plan, task)
    out = []
    c.begin(out, id_source(0, 1, task), 0.0, 1)
    parent = Tuple(["x"], Fields("v"), "s", "default", 9, {111: 0b1010, 222: 0b0110})
    c.emit(["y"], parent)
    c.emit(["z"], [parent, parent])  # anchoring twice to the same tuple is allowed
    children = [tup for _, tup in out]
    assert [sorted(ch.anchors_to_ids) for ch in children] == [[111, 222], [111, 222]]
    c.ack(parent)
    c.flush_acks()
    (batch,) = [tup for _, tup in out if tup.source_stream == ACKER_ACK_STREAM_ID]
    acks = dict(zip(batch.values[0].tolist(), batch.values[1].tolist(), strict=True))
    for root, edge in parent.anchors_to_ids.items():
        # what reaches the acker for this root, plus the children's own acks, is the edge
        child_edges = reduce(xor, (ch.anchors_to_ids[root] for ch in children))
        assert acks[root] ^ child_edges == edge


def test_unanchored_and_rootless_anchors_create_no_edges():
    plan = make_plan()
    task = plan.component_tasks("a")[0]
    c = OutputCollector(plan, task)
    out = []
    c.begin(out, id_source(0, 1, task), 0.0, 1)
    unanchored_input = Tuple(["x"], Fields("v"), "s", "default", 9)
    c.emit(["y"], unanchored_input)
    c.emit(["z"])
    c.ack(unanchored_input)
    c.flush_acks()
    assert [tup.anchors_to_ids for _, tup in out] == [None, None]
    assert unanchored_input._ack_val == 0


def test_fail_flushes_the_acks_sent_before_it_first():
    plan = make_plan()
    task = plan.component_tasks("a")[0]
    c = OutputCollector(plan, task)
    out = []
    c.begin(out, id_source(0, 1, task), 0.0, 1)
    t1 = Tuple(["x"], Fields("v"), "s", "default", 9, {5: 1})
    t2 = Tuple(["x"], Fields("v"), "s", "default", 9, {5: 2})
    t3 = Tuple(["x"], Fields("v"), "s", "default", 9, {6: 4})
    c.ack(t1)
    c.ack(t3)
    c.fail(t2)
    c.flush_acks()
    sent = [(tup.source_stream, np.asarray(tup.values[0]).tolist()) for _, tup in out]
    assert sent == [("__ack_ack", [5, 6]), ("__ack_fail", 5)]


def test_acks_are_batched_per_acker_task_by_root_mod_n():
    plan = make_plan(ackers=3)
    task = plan.component_tasks("a")[0]
    c = OutputCollector(plan, task)
    out = []
    c.begin(out, id_source(0, 1, task), 0.0, 1)
    roots = [3, 4, 7, 9, 2**64 - 2]
    for root in roots:
        c.ack(Tuple(["x"], Fields("v"), "s", "default", 9, {root: root + 1}))
    c.flush_acks()
    got = {target: tup.values[0].tolist() for target, tup in out}
    assert len(out) == 3  # one batch per acker task, not one message per root
    assert got == {plan.acker_tasks[i]: [r for r in roots if r % 3 == i] for i in range(3)}


def test_fields_grouping_is_stable_and_consistent():
    builder = TopologyBuilder()
    builder.set_spout("s", FeederSpout(Fields("word", "n")))
    builder.set_bolt("a", Out(), 5).fields_grouping("s", Fields("word"))
    plan = Plan(builder.create_topology(), resolve(Config()))
    route = plan.routes("s")["default"]
    first = [route.targets([w, i], i) for i, w in enumerate(["a", "b", "c"] * 3)]
    assert first[:3] == first[3:6] == first[6:]
    assert route.targets(["a", 0], 0) == route.targets(["a", 99], 7)


def shuffled_plan():
    builder = TopologyBuilder()
    builder.set_spout("s", FeederSpout(Fields("v")))
    builder.set_bolt("a", Out()).shuffle_grouping("s")
    builder.set_bolt("b", Out(), 2).shuffle_grouping("a")
    builder.set_bolt("c", Out(), 2).shuffle_grouping("s")
    return Plan(builder.create_topology(), resolve(Config()))


def test_a_spout_emitting_once_every_other_superstep_still_shuffles_round_robin():
    plan = shuffled_plan()
    c = SpoutOutputCollector(plan, plan.component_tasks("s")[0], Tracker())
    seen = []
    for superstep in range(0, 40, 2):  # a paced spout, due every other superstep
        c.begin([], id_source(0, superstep, 0), 0.0, superstep)
        seen += [t for t in c.emit(["x"], msg_id=superstep) if t in plan.component_tasks("c")]
    first, second = plan.component_tasks("c")
    assert seen == [first, second] * 10 or seen == [second, first] * 10


def test_a_bolt_emitting_once_every_other_superstep_spreads_its_tuples():
    plan = shuffled_plan()
    task = plan.component_tasks("a")[0]
    c = OutputCollector(plan, task)
    seen = []
    for superstep in range(0, 400, 2):
        c.begin([], id_source(0, superstep, task), 0.0, superstep)
        seen += c.emit(["x"])
    counts = [seen.count(t) for t in plan.component_tasks("b")]
    assert min(counts) > 70, counts  # about 100 each: not all to one task
