import pickle
import random

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from sparkstorm.reliability.pending_trees import PendingTrees, xor_by_root


def u64(values):
    return np.array(values, np.uint64)


def put(table, roots, vals=None, task=1):
    roots = u64(roots)
    vals = u64(vals if vals is not None else [7] * len(roots))
    table.reserve(len(roots))
    return table.insert(roots, vals, np.full(len(roots), task, np.int32))


def test_find_insert_and_grow_past_many_capacities():
    table = PendingTrees(capacity=8)
    rng = random.Random(3)
    roots = [*{rng.getrandbits(64) for _ in range(5000)}, 0, 2**64 - 1]
    for i in range(0, len(roots), 700):
        put(table, roots[i : i + 700], [r ^ 5 for r in roots[i : i + 700]])
    slots = table.find(u64(roots))
    assert (slots >= 0).all() and len(table) == len(roots)
    assert (table.vals[slots] == u64(roots) ^ np.uint64(5)).all()
    assert table.find(u64([12345]))[0] == -1 or 12345 in roots
    assert len(table.keys) <= len(roots) / 0.5  # stays compact: at least half full


def test_colliding_roots_in_one_batch_get_distinct_slots():
    table = PendingTrees(capacity=16)
    slots = put(table, [1, 17, 33, 49, 65])
    assert len(set(slots.tolist())) == 5
    assert (table.find(u64([1, 17, 33, 49, 65])) == slots).all()


def test_removed_slots_are_reused_and_lookups_skip_them():
    table = PendingTrees(capacity=16)
    slots = put(table, list(range(1, 9)))
    table.remove(slots[:4])
    assert (table.find(u64([1, 2, 3, 4])) == -1).all()
    assert (table.find(u64([5, 6, 7, 8])) >= 0).all()
    put(table, [100, 200, 300])
    assert len(table) == 7 and (table.find(u64([5, 6, 7, 8, 100, 200, 300])) >= 0).all()


def test_rotation_expires_after_three_rotations_unless_refreshed():
    table = PendingTrees()
    slots = put(table, [1, 2])
    table.rotate()
    table.rotate()
    table.refresh(slots[1:])
    assert table.keys[table.rotate()].tolist() == [1]  # put three rotations ago
    assert table.find(u64([1]))[0] == -1 and table.find(u64([2]))[0] >= 0
    for _ in range(260):  # the epoch is a byte: it wraps without confusing ages
        table.refresh(table.find(u64([2])))
        assert table.rotate().size == 0


def test_snapshot_keeps_live_trees_only_and_restores_them():
    table = PendingTrees()
    slots = put(table, list(range(1, 1001)), list(range(1001, 2001)))
    table.remove(slots[:500])
    table.reasons[600] = "why"
    data = pickle.dumps(table)
    assert len(data) < 500 * 21 + 2000  # 21 bytes per live tree, plus a header
    restored = pickle.loads(data)
    found = restored.find(u64(list(range(501, 1001))))
    assert (found >= 0).all() and len(restored) == 500
    assert (restored.vals[found] == u64(list(range(1501, 2001)))).all()
    assert restored.reasons == {600: "why"} and restored.rotation == table.rotation


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2**64 - 1)), max_size=60))
def test_xor_by_root_combines_each_root_s_values_in_runs_or_scattered(pairs):
    expected: dict[int, int] = {}
    for root, value in pairs:
        expected[root] = expected.get(root, 0) ^ value
    roots, combined = xor_by_root(u64([r for r, _ in pairs]), u64([v for _, v in pairs]))
    assert dict(zip(roots.tolist(), combined.tolist(), strict=True)) == expected
    assert len(roots) == len(expected)


def test_the_consecutive_roots_of_arrow_batches_spread_over_the_table():
    """A multiply's low bits left them in arithmetic runs: at some capacities a find
    probed 4.2 slots on average, against 1.6 for random roots."""
    rng = np.random.default_rng(5)
    for extra in range(0, 60000, 1499):
        bases = rng.integers(0, 2**63, 12, dtype=np.uint64)
        roots = np.concatenate([b + np.arange(4096, dtype=np.uint64) for b in bases])
        roots = roots[: 32768 + extra]
        table = PendingTrees()
        table.reserve(len(roots))
        table.insert(roots, roots, np.zeros(len(roots), np.int32))
        slots, probes, active = table._home(roots), 0, np.arange(len(roots))
        while active.size:  # find's probing, counted
            probes += active.size
            at = slots[active]
            done = table.keys[at] == roots[active]
            active = active[~done]
            slots[active] = (slots[active] + 1) % len(table.keys)
        assert probes / len(roots) < 2.5, (len(table.keys), probes / len(roots))
