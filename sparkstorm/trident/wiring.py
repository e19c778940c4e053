"""How a batch's rows travel between the bolts a Trident topology compiles into.

Every task that takes part in a batch sends, on every edge out of its bolt, exactly one
message to every task of the next bolt: the rows of that batch for that task, possibly
none. A task therefore knows a batch is complete when it holds one message from every
task upstream, and the acker, which tracks those messages, tells the coordinator when
every task finished the batch. The message is ``[batch key, rows]``: one core tuple
per batch partition, not one per Trident tuple; ``rows`` is a list of rows, or a record
batch once a columnar operation ran (``trident/columnar.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.groupings import stable_hash
from sparkstorm.trident.columnar import as_rows, deal_columns, is_columns
from sparkstorm.trident.nodes import (
    BATCH_GLOBAL,
    BROADCAST,
    CUSTOM,
    FIELDS,
    GLOBAL,
    IDENTITY,
    SHUFFLE,
    Partitioning,
    Row,
    batch_global_index,
)

SHARE_FIELDS = Fields("batch", "rows")
COMMIT_STREAM = "commit"
COMMIT_FIELDS = Fields("batch")

BatchKey = tuple[Any, int, int, bool]
"""(source, txid, attempt, commit phase): which batch a message belongs to."""


@dataclass(frozen=True)
class Edge:
    """Rows of node ``node`` (in bolt ``from_component``) to node ``child`` of another bolt."""

    edge_id: int
    node: int
    child: int
    slot: int
    """Which of the child's parents this is."""
    from_component: str
    to_component: str
    partitioning: Partitioning
    sources: frozenset[Any]
    commit_phase: bool

    @property
    def stream(self) -> str:
        """The core stream the edge's messages go on."""
        return f"e{self.edge_id}"


Chooser = Callable[[Row], list[int]]
"""A custom grouping, as a task asks it: the indexes of the tasks a row goes to."""


def deal(
    rows: list[Row],
    by: Partitioning,
    n: int,
    txid: int,
    source: int = 0,
    choose: Chooser | None = None,
) -> list[list[Row]]:
    """``rows`` dealt over ``n`` tasks (by index) as ``by`` says.

    ``source`` is the sending task's index (an identity partition sends to the same
    one); ``choose``, a custom grouping's choice for one row. Every way is a function
    of the rows, their order, the txid and the sender: a batch replayed, by the same
    tasks or new ones after a restart, is dealt as its first attempt was, so a state
    partition that skips a txid it committed skips exactly the rows it wrote then.
    """
    if is_columns(rows):
        return _deal_columns(rows, by, n, txid, source, choose)
    shares: list[list[Row]] = [[] for _ in range(n)]
    kind = by.kind
    if kind == FIELDS:
        indexes = by.indexes
        for row in rows:
            shares[stable_hash(row, indexes) % n].append(row)
    elif kind == GLOBAL:
        shares[0] = rows
    elif kind == BATCH_GLOBAL:
        shares[batch_global_index(txid, n)] = rows
    elif kind == BROADCAST:
        shares = [rows] * n
    elif kind == IDENTITY:
        shares[source] = rows
    elif kind == CUSTOM:
        assert choose is not None
        for row in rows:
            for index in choose(row):
                shares[index].append(row)
    else:  # shuffle: in turn, each batch and sender starting elsewhere
        start = txid + source
        for i, row in enumerate(rows):
            shares[(i + start) % n].append(row)
    return shares


def _deal_columns(
    batch: Any, by: Partitioning, n: int, txid: int, source: int, choose: Chooser | None
) -> list[Any]:
    """A record batch dealt as :func:`deal` deals its rows: each row to the same task."""
    kind = by.kind
    if kind in (FIELDS, SHUFFLE):
        try:
            return deal_columns(batch, kind, by.indexes, n, txid + source)
        except ValueError:  # a key column with nulls: the rows' own hash
            return deal(as_rows(batch), by, n, txid, source, choose)
    if kind == CUSTOM:
        return deal(as_rows(batch), by, n, txid, source, choose)
    none = batch.slice(0, 0)
    if kind == BROADCAST:
        return [batch] * n
    target = {GLOBAL: 0, BATCH_GLOBAL: batch_global_index(txid, n), IDENTITY: source}[kind]
    return [batch if i == target else none for i in range(n)]


def custom_chooser(
    grouping: Any, sender: str, stream: str, task_id: int, targets: list[int], context: Any
) -> Chooser:
    """A task's own custom grouping, prepared for ``targets``: a row's target indexes."""
    from sparkstorm.topology.declarers import GlobalStreamId

    prepare = getattr(grouping, "prepare", None)
    if callable(prepare):
        prepare(context, GlobalStreamId(sender, stream), list(targets))
    index_of = {task: i for i, task in enumerate(targets)}

    def choose(row: Row) -> list[int]:
        chosen = grouping.choose_tasks(task_id, row)
        try:
            return [index_of[task] for task in chosen]
        except KeyError:
            msg = (
                f"custom grouping {type(grouping).__name__} of {sender!r} chose tasks "
                f"{list(chosen)}; it may choose only among {targets}"
            )
            raise InvalidTopologyError(msg, component=sender) from None

    return choose
