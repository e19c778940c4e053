"""The batched numpy acker against a plain reference that takes one tree at a time.

The reference is Storm's ``Acker.execute`` written with dicts and the project's
``RotatingMap``: for each batch, each root's messages are applied in order, then the
tree is decided once (zero wins, then a failure, then a reset), which is what the
batched acker promises for the messages one task receives in one turn. Random trees
(complete, incomplete, failed, reset), their messages shuffled, cut into batches with
ticks between some: every batch's outcomes and the final pending map must agree.
"""

from __future__ import annotations

from functools import reduce
from itertools import pairwise
from operator import xor

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkstorm._types import FailReason
from sparkstorm.reliability.pending_trees import LIVE
from sparkstorm.reliability.rotating_map import RotatingMap
from sparkstorm.topology.streams import (
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    ACKER_RESET_TIMEOUT_STREAM_ID,
    FIELDS_BY_STREAM,
)
from sparkstorm.topology.tuple import Tuple, tick_tuple
from tests.unit.reliability.test_acker import AckerHarness

STREAM = {
    "init": ACKER_INIT_STREAM_ID,
    "ack": ACKER_ACK_STREAM_ID,
    "fail": ACKER_FAIL_STREAM_ID,
    "reset": ACKER_RESET_TIMEOUT_STREAM_ID,
}
OUTCOME = {
    ACKER_ACK_STREAM_ID: "ack",
    ACKER_FAIL_STREAM_ID: "fail",
    ACKER_RESET_TIMEOUT_STREAM_ID: "reset",
}


class ReferenceAcker:
    """Storm's acker, one tree at a time: root -> [ack val, spout task, fail reason]."""

    def __init__(self) -> None:
        self.pending: RotatingMap[int, list] = RotatingMap(3)

    def tick(self) -> None:
        self.pending.rotate()  # expired trees are dropped: the spout times them out

    def batch(self, messages: list[tuple]) -> list[tuple]:
        by_root: dict[int, list[tuple]] = {}
        for message in messages:
            by_root.setdefault(message[1], []).append(message)
        outcomes = []
        for root, mine in by_root.items():
            entry = self.pending.get(root)
            if entry is None:
                entry = [0, -1, None]
                self.pending.put(root, entry)
            reset = False
            for kind, _, *args in mine:
                if kind == "init":
                    entry[0] ^= args[0]
                    entry[1] = args[1]
                elif kind == "ack":
                    entry[0] ^= args[0]
                elif kind == "fail":
                    entry[2] = entry[2] or args[0]
                    self.pending.put(root, entry)  # a fail refreshes the expiry
                else:
                    reset = True
                    self.pending.put(root, entry)  # so does a reset
            val, spout_task, reason = entry
            if spout_task < 0:
                continue  # an ack or fail before its init: decided once the init names the spout
            if val == 0:
                self.pending.remove(root)
                outcomes.append(("ack", spout_task, root, None))
            elif reason is not None:
                self.pending.remove(root)
                outcomes.append(("fail", spout_task, root, reason))
            elif reset:
                outcomes.append(("reset", spout_task, root, None))
        return sorted(outcomes, key=repr)


def send_to_acker(harness: AckerHarness, messages: list[tuple]) -> list[tuple]:
    """Deliver ``messages`` as the collectors send them, as one batch; return the outcomes."""
    tuples = []
    for kind, root, *args in messages:
        if kind == "init":
            values = [[root], [args[0]], args[1]]
        elif kind == "ack":
            values = [[root], [args[0]]]
        elif kind == "fail":
            values = [root, args[0]]
        else:
            values = [root]
        stream = STREAM[kind]
        tuples.append(Tuple(values, FIELDS_BY_STREAM[stream], "b", stream, 2))
    harness.step += 1
    out: list = []
    harness.task.run(tuples, harness.step, 0.0, out)
    outcomes = []
    for spout_task, tup in out:
        ids, details = tup.values
        for i, root in enumerate(ids):
            reason = None if details is None else details[i]
            outcomes.append((OUTCOME[tup.source_stream], spout_task, root, reason))
    return sorted(outcomes, key=repr)


def tick(harness: AckerHarness) -> None:
    out: list = []
    harness.task.run([tick_tuple(30)], harness.step, 0.0, out)
    assert out == []


@st.composite
def trees(draw):
    """Messages of up to 12 trees, each complete, incomplete, failed or reset, shuffled."""
    roots = draw(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=12, unique=True))
    messages = []
    for root in roots:
        edges = draw(st.lists(st.integers(1, 2**64 - 1), min_size=1, max_size=4))
        spout_task = draw(st.sampled_from([1, 7]))
        messages.append(("init", root, reduce(xor, edges), spout_task))
        fate = draw(st.sampled_from(["complete", "incomplete", "fail", "reset"]))
        acked = edges[1:] if fate == "incomplete" else edges
        messages.extend(("ack", root, edge) for edge in acked)
        if fate == "fail":
            messages.append(("fail", root, FailReason("explicit", "b", 2)))
        elif fate == "reset":
            messages.append(("reset", root))
    return draw(st.permutations(messages))


@settings(max_examples=300, deadline=None)
@given(trees(), st.data())
def test_the_batched_acker_decides_as_the_one_tree_at_a_time_reference(messages, data):
    batched, reference = AckerHarness(), ReferenceAcker()
    cuts = sorted(data.draw(st.sets(st.integers(0, len(messages)), max_size=8)))
    bounds = [0, *cuts, len(messages)]
    for start, end in pairwise(bounds):
        batch = messages[start:end]
        if batch:
            assert send_to_acker(batched, batch) == reference.batch(batch)
        for _ in range(data.draw(st.integers(0, 3))):  # expiry takes three
            tick(batched)
            reference.tick()
    pending = batched.pending
    live = pending.state == LIVE
    left = dict(zip(pending.keys[live].tolist(), pending.vals[live].tolist(), strict=True))
    assert left == {root: entry[0] for root, entry in reference.pending.items()}
    assert dict(zip(pending.keys[live].tolist(), pending.tasks[live].tolist(), strict=True)) == {
        root: entry[1] for root, entry in reference.pending.items()
    }
    assert np.count_nonzero(live) == reference.pending.size()
