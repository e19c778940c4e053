"""An Arrow spout's pending map holds a batch as one entry, and behaves as Storm's
RotatingMap of one entry a message would: the same outcomes, expiries and sizes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkstorm.reliability.ids import consecutive_base
from sparkstorm.reliability.pending_batches import PendingBatches
from sparkstorm.reliability.rotating_map import RotatingMap

TOP = (1 << 64) - 1


def u64(values):
    return np.array(values, np.uint64)


def test_acks_of_many_roots_take_their_rows_and_name_the_rest():
    pending = PendingBatches(2)
    pending.put_batch(1000, ["a", "b", "c"], 5.0, "default")
    pending.put_batch(50, ["x", "y"], 6.0, "other")
    pending.put(7, ("single", 7.0, "default"))
    assert len(pending) == 6
    acked = pending.remove_acked(u64([1001, 51, 7, 999, 1003, 1001]))
    assert sorted(acked.msg_ids) == ["b", "y"]
    assert sorted(acked.emitted.tolist()) == [5.0, 6.0]
    assert acked.streams == {"default": 1, "other": 1}
    assert sorted(acked.elsewhere) == [7, 999, 1003]  # an entry and unknowns; a repeat is one
    assert len(pending) == 4
    assert pending.get(1000) == ("a", 5.0, "default")
    assert pending.get(1001) is None
    assert pending.remove(1002) == ("c", 5.0, "default")
    assert pending.remove(1000) == ("a", 5.0, "default")
    assert 1000 not in pending and len(pending) == 2  # the batch is gone


def test_a_reset_row_leaves_its_batch_and_expires_later():
    expired = []
    pending = PendingBatches(2, lambda root, entry: expired.append((root, entry[0])))
    pending.put_batch(10, ["a", "b"], 1.0, "default")
    pending.rotate()
    pending.put(11, pending.get(11))  # a reset: newest bucket again
    pending.rotate()
    assert expired == [(10, "a")]
    assert pending.items() == [(11, ("b", 1.0, "default"))]
    pending.rotate()
    assert expired == [(10, "a"), (11, "b")]
    assert len(pending) == 0


def test_an_expiry_callback_may_put_a_row_back():
    pending: PendingBatches

    def keep(root, entry):
        pending.put(root, entry)

    pending = PendingBatches(2, keep)
    pending.put_batch(20, ["a", "b"], 1.0, "default")
    pending.rotate()
    pending.rotate()
    assert sorted(root for root, _ in pending.items()) == [20, 21]
    assert len(pending) == 2
    assert sorted(pending.remove_acked(u64([20, 21])).elsewhere) == [20, 21]


def test_the_base_of_a_batch_leaves_room_for_its_rows_below_two_to_the_64():
    assert consecutive_base(TOP, 4096) + 4095 <= TOP
    assert consecutive_base(5, 4096) == 5
    pending = PendingBatches(2)
    base = consecutive_base(TOP - 1, 3)
    pending.put_batch(base, ["a", "b", "c"], 1.0, "default")
    assert base == TOP - 4
    assert pending.remove_acked(u64([TOP - 3, 3])).msg_ids == ["b"]
    assert pending.get(TOP - 4) == ("a", 1.0, "default")
    assert pending.remove(TOP - 2) == ("c", 1.0, "default")


operations = st.lists(
    st.one_of(
        st.tuples(st.just("batch"), st.integers(1, 5)),
        st.tuples(st.just("ack"), st.lists(st.integers(0, 40), max_size=8)),
        st.tuples(st.just("remove"), st.integers(0, 40)),
        st.tuples(st.just("reset"), st.integers(0, 40)),
        st.tuples(st.just("rotate"), st.none()),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(operations, st.sampled_from([0, 1 << 63, TOP - 20]))
def test_it_behaves_as_a_rotating_map_of_one_entry_a_message(ops, start):
    """Roots ``start`` onwards, batches side by side; a model RotatingMap holds a row each."""
    seen_model, seen = [], []
    model = RotatingMap(2, lambda root, entry: seen_model.append((root, entry)))
    pending = PendingBatches(2, lambda root, entry: seen.append((root, entry)))
    next_root = start
    for kind, arg in ops:
        if kind == "batch":
            if next_root + arg > TOP:
                continue
            ids = [f"m{next_root + i - start}" for i in range(arg)]
            pending.put_batch(next_root, ids, float(next_root), "default")
            for i, msg_id in enumerate(ids):
                model.put(next_root + i, (msg_id, float(next_root), "default"))
            next_root += arg
            continue
        if kind == "ack":
            roots = [start + r for r in arg if start + r <= TOP]
            acked = pending.remove_acked(u64(roots))
            rest = RotatingMap.remove_many(pending, acked.elsewhere)
            got = acked.msg_ids + [e[0] for e in rest if e is not None]
            want = [e[0] for e in model.remove_many(list(dict.fromkeys(roots))) if e]
            assert sorted(got) == sorted(want)
        elif kind == "remove":
            assert pending.remove(start + arg) == model.remove(start + arg)
        elif kind == "reset":
            entry = model.get(start + arg)
            assert pending.get(start + arg) == entry
            if entry is not None:
                model.put(start + arg, entry)
                pending.put(start + arg, entry)
        else:
            pending.rotate()
            model.rotate()
        assert len(pending) == len(model)
        assert sorted(pending.items()) == sorted(model.items())
        assert sorted(seen) == sorted(seen_model)
