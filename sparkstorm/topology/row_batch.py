"""``RowBatch``: an Arrow record batch in flight, one tuple to the engines, a message a row.

An Arrow stream moves between tasks as record batches, each one :class:`RowBatch`: to
the engines (the local queues, Spark's envelopes, the continuous mode's frames) it is a
tuple like any other, addressed to one task, in FIFO order with the tuples around it.
Between processes
(Spark's envelopes, the continuous mode's frames) its rows travel as an Arrow IPC stream
message. To the reliability core each row is its own tuple: its *links* say which trees it
belongs to, a ``(row, root, edge)`` triple per tree (Storm's ``MessageId`` of a tuple,
for every row at once), and ``ack_vals`` holds, per row, the XOR of the edge ids of
everything emitted anchored to it (a tuple's ``_ack_val``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from sparkstorm.topology.fields import Fields
from sparkstorm.topology.tuple import Tuple

U64 = np.uint64


class Links:
    """The trees each row of a batch belongs to: ``(row, root, edge)`` triples."""

    __slots__ = ("edges", "roots", "rows")

    def __init__(self, rows: Any, roots: Any, edges: Any) -> None:
        self.rows = np.asarray(rows, np.int64)
        self.roots = np.asarray(roots, U64)
        self.edges = np.asarray(edges, U64)

    @classmethod
    def empty(cls) -> Links:
        """No row in any tree (an unanchored batch)."""
        return cls(np.zeros(0, np.int64), np.zeros(0, U64), np.zeros(0, U64))

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, rows: Any) -> Links:
        """The links of ``rows`` (indexes of this batch), renumbered 0.. in that order."""
        if not len(self):
            return self
        position = np.full(int(self.rows.max(initial=-1)) + 1, -1, np.int64)
        position[np.asarray(rows, np.int64)] = np.arange(len(rows))
        mine = position[self.rows] >= 0 if len(position) else np.zeros(0, bool)
        return Links(position[self.rows[mine]], self.roots[mine], self.edges[mine])

    def of(self, mask: Any) -> Links:
        """The links of the rows where ``mask`` (one bool a row of the batch) is true."""
        if not len(self):
            return self
        keep = np.asarray(mask, bool)[self.rows]
        return Links(self.rows[keep], self.roots[keep], self.edges[keep])

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.rows, self.roots, self.edges)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.rows, self.roots, self.edges = state


class RowBatch(Tuple):
    """A record batch of a stream, to one task: its rows, and the trees each is in.

    ``values`` is ``[record_batch]``; ``links`` the rows' trees; ``ack_vals`` (made by the
    first emit anchored to a row) each row's XOR of its children's edges; ``settled``
    which rows were acked or failed already.
    """

    __slots__ = ("ack_vals", "links", "settled")

    def __init__(
        self,
        batch: pa.RecordBatch,
        fields: Fields,
        source_component: str,
        source_stream: str,
        source_task: int,
        links: Links | None = None,
    ) -> None:
        super().__init__([batch], fields, source_component, source_stream, source_task)
        self.links = links if links is not None else Links.empty()
        self.ack_vals: Any = None
        self.settled: Any = None

    @property
    def batch(self) -> pa.RecordBatch:
        """The rows, as a record batch of the stream's fields."""
        return self.values[0]

    @property
    def num_rows(self) -> int:
        """How many rows (messages) it holds."""
        return int(self.values[0].num_rows)

    def row_ack_vals(self) -> Any:
        """Each row's XOR of its children's edges (created at the first anchored emit)."""
        if self.ack_vals is None:
            self.ack_vals = np.zeros(self.num_rows, U64)
        return self.ack_vals

    def mask_of(self, rows: Any) -> Any:
        """A bool a row of the batch, true at ``rows`` (an int array of row indexes)."""
        mask = np.zeros(self.num_rows, bool)
        mask[rows] = True
        return mask

    def unsettled(self) -> Any:
        """Which rows are neither acked nor failed yet (one bool a row)."""
        if self.settled is None:
            self.settled = np.zeros(self.num_rows, bool)
        return ~self.settled

    def __getstate__(self) -> tuple[Any, ...]:
        # the rows as one Arrow IPC stream message (schema and buffers), not pickled
        _, *rest = super().__getstate__()  # values first: [record_batch]
        return (_ipc(self.values[0]), *rest, self.links, self.ack_vals, self.settled)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        rows, *rest = state[:-3]
        super().__setstate__(([pa.ipc.open_stream(rows).read_next_batch()], *rest))
        self.links, self.ack_vals, self.settled = state[-3:]

    def __repr__(self) -> str:
        return (
            f"RowBatch(source={self.source_component}:{self.source_task}, "
            f"stream={self.source_stream!r}, rows={self.num_rows})"
        )


def _ipc(batch: pa.RecordBatch) -> bytes:
    """``batch`` as an Arrow IPC stream: what a batch is between processes."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    message: bytes = sink.getvalue().to_pybytes()
    return message


def rows_as_tuples(batch: RowBatch) -> list[Tuple]:
    """The batch as one :class:`Tuple` a row, each in its trees (for a tuple bolt)."""
    record = batch.batch
    columns = [record.column(i).to_pylist() for i in range(record.num_columns)]
    roots: list[dict[int, int] | None] = [None] * record.num_rows
    links = batch.links
    for row, root, edge in zip(
        links.rows.tolist(), links.roots.tolist(), links.edges.tolist(), strict=True
    ):
        mine = roots[row]
        if mine is None:
            roots[row] = {root: edge}
        else:
            mine[root] = mine.get(root, 0) ^ edge
    component, stream, task, fields = (
        batch.source_component,
        batch.source_stream,
        batch.source_task,
        batch.fields,
    )
    return (
        [
            Tuple(list(values), fields, component, stream, task, trees)
            for values, trees in zip(zip(*columns, strict=True), roots, strict=True)
        ]
        if columns
        else [Tuple([], fields, component, stream, task, trees) for trees in roots]
    )


def tuples_as_batch(tuples: list[Tuple], schema: pa.Schema | None = None) -> RowBatch:
    """Tuples of one stream and source as one :class:`RowBatch` (for an Arrow bolt)."""
    first = tuples[0]
    names = list(first.fields)
    columns = list(zip(*(t.values for t in tuples), strict=True)) if names else []
    arrays = [
        pa.array(list(column), type=None if schema is None else schema.field(i).type)
        for i, column in enumerate(columns)
    ]
    record = pa.RecordBatch.from_arrays(arrays, names=names)
    rows, roots, edges = [], [], []
    for i, tup in enumerate(tuples):
        for root, edge in (tup.anchors_to_ids or {}).items():
            rows.append(i)
            roots.append(root)
            edges.append(edge)
    links = Links(rows, roots, edges) if rows else Links.empty()
    made = RowBatch(
        record,
        first.fields,
        first.source_component,
        first.source_stream,
        first.source_task,
        links,
    )
    made.received_at = first.received_at
    return made
