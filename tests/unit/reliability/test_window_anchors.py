"""Output rows anchored to a whole window: each tree completes when, and only when, every
window row and every output row in it is acked (the XOR arithmetic, checked by hand).

Windows of rows in one tree each (spout rows, split words) and of rows in several trees
(joins), mixed, with edges drawn at random: the arithmetic must hold for any of them.
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkstorm.reliability.window_anchors import window_links
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.row_batch import Links, RowBatch


def batch_in_trees(trees_per_row: list[list[int]], rng: random.Random) -> RowBatch:
    """A batch whose row i is in the trees ``trees_per_row[i]``, an edge each."""
    rows = [i for i, trees in enumerate(trees_per_row) for _ in trees]
    roots = [root for trees in trees_per_row for root in trees]
    edges = [rng.getrandbits(64) for _ in rows]
    data = pa.record_batch([pa.array(range(len(trees_per_row)))], names=["n"])
    return RowBatch(data, Fields("n"), "in", "default", 1, Links(rows, roots, edges))


def xor_per_root(links: Links, values) -> dict[int, int]:
    out: dict[int, int] = {}
    for root, value in zip(links.roots.tolist(), np.asarray(values).tolist(), strict=True):
        out[root] = out.get(root, 0) ^ value
    return out


def combine(*parts: dict[int, int]) -> dict[int, int]:
    total: dict[int, int] = {}
    for part in parts:
        for root, value in part.items():
            total[root] = total.get(root, 0) ^ value
    return total


trees_of_a_row = st.lists(st.integers(1, 6), min_size=1, max_size=3, unique=True)
batches = st.lists(st.lists(trees_of_a_row, min_size=1, max_size=6), min_size=1, max_size=3)


@settings(max_examples=150, deadline=None)
@given(batches=batches, outputs=st.integers(1, 4), seed=st.integers(0, 2**32))
def test_every_tree_completes_only_once_its_window_rows_and_outputs_are_acked(
    batches, outputs, seed
):
    rng = random.Random(seed)
    window = [batch_in_trees(rows, rng) for rows in batches]
    # the acker's value per tree: the window rows' edges arrived with their parents' acks
    arrived = combine(*(xor_per_root(b.links, b.links.edges) for b in window))
    ids = iter(rng.getrandbits(64) for _ in range(10**6))
    links = window_links(lambda: next(ids), [(b, np.arange(b.num_rows)) for b in window], outputs)
    assert set(links.rows.tolist()) <= set(range(outputs))
    trees = {root for b in window for root in b.links.roots.tolist()}
    for out in range(outputs):  # each output row is in every tree of the window
        assert set(links.roots[links.rows == out].tolist()) == trees
    window_acked = combine(
        *(xor_per_root(b.links, b.links.edges ^ b.row_ack_vals()[b.links.rows]) for b in window)
    )
    outputs_acked = xor_per_root(links, links.edges)
    everything = combine(arrived, window_acked, outputs_acked)  # a row's ack: edge ^ ack_val
    assert all(value == 0 for value in everything.values())  # all acked: complete
    before_outputs = combine(arrived, window_acked)
    assert all(before_outputs[root] != 0 for root in trees)  # an output pending: not yet


def test_a_window_of_rows_in_no_tree_gives_no_links():
    untracked = RowBatch(
        pa.record_batch([pa.array([1, 2])], names=["n"]), Fields("n"), "in", "s", 1
    )
    assert len(window_links(lambda: 7, [(untracked, np.arange(2))], 3)) == 0


def test_the_links_grow_with_the_trees_not_with_the_rows():
    rng = random.Random(1)
    words = batch_in_trees([[1 + i // 10] for i in range(1000)], rng)  # 100 sentences
    ids = iter(range(1, 10**6))
    links = window_links(lambda: next(ids), [(words, np.arange(1000))], 50)
    assert len(links) == 50 * 100  # Storm's way: 50 * 1000 edges
