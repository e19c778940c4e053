"""How a batch's rows travel between the bolts a Trident topology compiles into.

Every task that takes part in a batch sends, on every edge out of its bolt, exactly one
message to every task of the next bolt: the rows of that batch for that task, possibly
none. A task therefore knows a batch is complete when it holds one message from every
task upstream, and the acker, which tracks those messages, tells the coordinator when
every task finished the batch. The message is ``[batch key, rows]``: one core tuple
per batch partition, not one per Trident tuple.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkstorm.topology.fields import Fields
from sparkstorm.topology.groupings import stable_hash
from sparkstorm.trident.nodes import (
    BATCH_GLOBAL,
    BROADCAST,
    FIELDS,
    GLOBAL,
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


def deal(rows: list[Row], by: Partitioning, n: int, txid: int, offset: int) -> list[list[Row]]:
    """``rows`` dealt over ``n`` tasks (by index) as ``by`` says."""
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
    else:  # shuffle: in turn, starting where the last batch left off
        for i, row in enumerate(rows):
            shares[(i + offset) % n].append(row)
    return shares
