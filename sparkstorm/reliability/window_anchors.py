"""Output rows anchored to every row of a window, at a cost per tree, not per row.

Storm anchors a windowed bolt's emit to each tuple of its window: an edge id per (output,
input) pair, XORed into the input's ack value. Over a window of N rows from R trees and
K output rows that is N*K ids, where the trees need only K*R: an output row's edge to a
tree may be created by any one row of that tree that is acked after the emit (its ack
sends the edge to the tree), provided that row is in no other tree, since a row's ack
value goes to each of its trees. So each tree gets a *carrier*, one of its window rows
that is in that tree alone, and takes one edge per output row through it; a tree with
no such row in the window (its rows came of joins, each in several trees) takes an edge
per (output, row) through its rows, Storm's way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sparkstorm.reliability.batch_collectors import combined_links
from sparkstorm.reliability.ids import ids_of
from sparkstorm.topology.row_batch import Links, RowBatch


def window_links(
    next_id: Callable[[], int], window: Sequence[tuple[RowBatch, Any]], outputs: int
) -> Links:
    """The links of ``outputs`` output rows anchored to every row of ``window``.

    ``window`` holds each input batch with its rows in the window (an int array). The
    carriers' ack values take the new edges: they must be acked after this emit.
    """
    batch_of, rows, roots = _window_trees(window)
    if not len(rows):
        return Links.empty()
    key = batch_of * (1 + int(rows.max())) + rows  # one number per window row
    _, where, trees_of_row = np.unique(key, return_inverse=True, return_counts=True)
    alone = trees_of_row[where] == 1  # per link: its row is in this tree only
    carried, first = np.unique(roots[alone], return_index=True)
    carriers = np.nonzero(alone)[0][first]  # a link per carried tree
    parts = [_through(next_id, window, batch_of, rows, roots, carriers, outputs)]
    uncarried = ~alone & ~np.isin(roots, carried)
    if uncarried.any():  # rows of several trees each: an edge per (output, row)
        shared = np.isin(key, key[uncarried])
        parts.append(_per_row(next_id, window, batch_of, rows, roots, key, shared, outputs))
    return parts[0] if len(parts) == 1 else combined_links(parts)


def _window_trees(window: Sequence[tuple[RowBatch, Any]]) -> tuple[Any, Any, Any]:
    """Every (batch index, row, root) link of the window's rows."""
    batch_of, rows, roots = [], [], []
    for index, (source, picked) in enumerate(window):
        links = source.links.of(source.mask_of(picked))
        batch_of.append(np.full(len(links), index, np.int64))
        rows.append(links.rows)
        roots.append(links.roots)
    if not batch_of:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint64)
    return np.concatenate(batch_of), np.concatenate(rows), np.concatenate(roots)


def _through(
    next_id: Callable[[], int],
    window: Sequence[tuple[RowBatch, Any]],
    batch_of: Any,
    rows: Any,
    roots: Any,
    links: Any,
    outputs: int,
) -> Links:
    """Each output row's edge to each tree of ``links``, created by that link's row."""
    trees = len(links)
    edges = ids_of(next_id, outputs * trees).reshape(outputs, trees)
    _xor_into(window, batch_of[links], rows[links], np.bitwise_xor.reduce(edges, axis=0))
    return Links(
        np.repeat(np.arange(outputs), trees), np.tile(roots[links], outputs), edges.reshape(-1)
    )


def _per_row(
    next_id: Callable[[], int],
    window: Sequence[tuple[RowBatch, Any]],
    batch_of: Any,
    rows: Any,
    roots: Any,
    key: Any,
    shared: Any,
    outputs: int,
) -> Links:
    """Each output row's edge per row of ``shared`` links, joined to each of its trees."""
    row_keys, first, which = np.unique(key[shared], return_index=True, return_inverse=True)
    edges = ids_of(next_id, outputs * len(row_keys)).reshape(outputs, len(row_keys))
    picked = np.nonzero(shared)[0][first]
    _xor_into(window, batch_of[picked], rows[picked], np.bitwise_xor.reduce(edges, axis=0))
    count = int(shared.sum())
    return Links(
        np.repeat(np.arange(outputs), count),
        np.tile(roots[shared], outputs),
        edges[:, which].reshape(-1),
    )


def _xor_into(
    window: Sequence[tuple[RowBatch, Any]], batch_of: Any, rows: Any, values: Any
) -> None:
    """XOR ``values`` into the ack values of the rows (batch index, row) given."""
    for index in np.unique(batch_of).tolist():
        mine = batch_of == index
        np.bitwise_xor.at(window[index][0].row_ack_vals(), rows[mine], values[mine])
