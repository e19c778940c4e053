"""Which tasks each row of a record batch goes to: a stream's groupings over columns.

The same choice the tuple path makes, for every row at once: a shuffle deals the rows
in turn from where the task's counter stands (as many emits would), a fields grouping
sends a row where the tuple of its values would go (``column_hashing``), ``all`` sends
the batch to every task, ``global`` to the lowest. A partial key grouping or a custom
grouping is asked row by row, as it counts or decides per tuple.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from sparkstorm.topology.column_hashing import fields_hash
from sparkstorm.topology.declarers import ALL, CUSTOM, FIELDS, GLOBAL, PARTIAL_KEY
from sparkstorm.topology.groupings import StreamRoute

Shares = list[tuple[int, Any]]
"""(target task, the row indexes it gets, or None for every row), per target."""


def batch_targets(route: StreamRoute, batch: pa.RecordBatch, counter: int) -> Shares:
    """Each target task of ``route`` with the rows of ``batch`` it receives."""
    n = batch.num_rows
    shares: Shares = []
    for kind, tasks, indexes, chooser in route.subscribers:
        k = len(tasks)
        if kind == ALL:
            shares.extend((task, None) for task in tasks)
        elif kind == GLOBAL:
            shares.append((tasks[0], None))
        elif kind == FIELDS:
            _split(shares, tasks, (fields_hash(batch, indexes) % np.uint32(k)).astype(np.int64))
        elif kind in (PARTIAL_KEY, CUSTOM):  # asked a row at a time, as they decide
            rows = [list(r.values()) for r in batch.to_pylist()]
            chosen = [chooser(values, counter + i + 1) for i, values in enumerate(rows)]
            _split_lists(shares, chosen)
        else:  # shuffle, none, local or shuffle: in turn, as a run of emits would
            _split(shares, tasks, (counter + 1 + np.arange(n)) % k)
    return shares


def _split(shares: Shares, tasks: list[int], which: Any) -> None:
    """Rows by target index: one share per task that gets any."""
    if len(tasks) == 1:
        shares.append((tasks[0], None))
        return
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(len(tasks) + 1))
    for i, task in enumerate(tasks):
        rows = order[bounds[i] : bounds[i + 1]]
        if len(rows):
            shares.append((task, rows))


def _split_lists(shares: Shares, chosen: list[list[int]]) -> None:
    by_task: dict[int, list[int]] = {}
    for row, tasks in enumerate(chosen):
        for task in tasks:
            by_task.setdefault(task, []).append(row)
    shares.extend((task, np.asarray(rows, np.int64)) for task, rows in by_task.items())
