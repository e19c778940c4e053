"""Trident in columns: ``BaseArrowFunction``, ``BaseArrowFilter``, partitions as batches.

A batch partition is a list of rows, or a ``pyarrow.RecordBatch`` of the node's fields
once a columnar operation ran: the columns then travel as they are (to the next node,
and to the tasks of the next bolt, dealt by the same rules as rows) until an operation
that works a tuple at a time needs rows. ``Count``, ``Sum``, ``min_by`` and ``max_by``
aggregate a columnar partition with pyarrow, without a Python call per row. What a
batch writes into its states, and so exactly-once, is the same either way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import pyarrow as pa

from sparkstorm.topology.column_hashing import fields_hash
from sparkstorm.topology.fields import Fields
from sparkstorm.trident.operations import BaseFilter, BaseFunction
from sparkstorm.trident.tuple import TridentCollector, TridentTuple

Part = Any
"""A batch partition: ``list[Row]`` or a ``pyarrow.RecordBatch`` of the node's fields."""


class BaseArrowFunction(BaseFunction, ABC):
    """A function over a whole batch partition: ``execute_batch(batch) -> (out, parents)``.

    ``batch`` holds the input fields as columns; ``out`` is a record batch of the output
    fields (in order), and ``parents[i]`` the input row that output row i extends: its
    fields are appended to that row's, as ``each``'s are. Usable wherever a
    ``BaseFunction`` is; where an operation is called a tuple at a time, ``execute``
    runs ``execute_batch`` over that one tuple.

    Examples
    --------
    >>> import pyarrow.compute as pc
    >>> class Split(BaseArrowFunction):
    ...     def execute_batch(self, batch):
    ...         lists = pc.split_pattern(batch.column(0), " ")
    ...         words = pa.record_batch([pc.list_flatten(lists)], names=["word"])
    ...         return words, pc.list_parent_indices(lists)

    .. versionadded:: 0.4.0
    """

    @abstractmethod
    def execute_batch(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, Any]:
        """The output rows, and for each the input row it extends (an integer array)."""

    def execute(self, tup: TridentTuple, collector: TridentCollector) -> None:
        """``execute_batch`` over the one tuple ``tup``: what it gives, emitted."""
        out, _ = self.execute_batch(one_row(tup))
        for values in zip(*(c.to_pylist() for c in out.columns), strict=True):
            collector.emit(list(values))


class BaseArrowFilter(BaseFilter, ABC):
    """A filter over a whole batch partition: ``keep(batch) -> mask`` (a bool a row).

    Usable wherever a ``BaseFilter`` is; ``is_keep`` asks ``keep`` of one tuple.

    Examples
    --------
    >>> import pyarrow.compute as pc
    >>> class Long(BaseArrowFilter):
    ...     def keep(self, batch):
    ...         return pc.greater(pc.utf8_length(batch.column(0)), 3)

    .. versionadded:: 0.4.0
    """

    @abstractmethod
    def keep(self, batch: pa.RecordBatch) -> Any:
        """Which rows go on: a boolean array (or Arrow array) of one entry a row."""

    def is_keep(self, tup: TridentTuple) -> bool:
        """``keep`` over the one tuple ``tup``."""
        return bool(np.asarray(self.keep(one_row(tup)))[0])


def one_row(tup: TridentTuple) -> pa.RecordBatch:
    """``tup`` as a record batch of one row, its fields as columns."""
    names = list(tup.fields) or [f"_{i}" for i in range(len(tup))]
    return pa.record_batch([pa.array([v]) for v in tup], names=names)


def is_columns(part: Part) -> bool:
    """Whether a batch partition is a record batch."""
    return isinstance(part, pa.RecordBatch)


def as_rows(part: Part) -> list[list[Any]]:
    """A batch partition as rows (lists of values)."""
    if not isinstance(part, pa.RecordBatch):
        return part  # type: ignore[no-any-return]
    columns = [c.to_pylist() for c in part.columns]
    return [list(values) for values in zip(*columns, strict=True)]


def as_columns(part: Part, fields: Fields) -> pa.RecordBatch:
    """A batch partition as a record batch of ``fields`` (types inferred from rows)."""
    if isinstance(part, pa.RecordBatch):
        return part
    names = fields.to_list()
    if not part:
        return pa.record_batch([pa.array([], pa.null()) for _ in names], names=names)
    columns = list(zip(*part, strict=True))
    return pa.record_batch([pa.array(c) for c in columns], names=names)


def concat(parts: list[Part]) -> Part:
    """The parts from several tasks as one: columns if they all are, else rows."""
    if len(parts) == 1:
        return parts[0]
    batches = [p for p in parts if isinstance(p, pa.RecordBatch) and p.num_rows]
    if len(batches) == len([p for p in parts if len(p)]):
        if not batches:
            return next((p for p in parts if isinstance(p, pa.RecordBatch)), [])
        if len(batches) == 1:
            return batches[0]
        try:
            return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]
        except pa.ArrowInvalid:  # the tasks inferred different types: go by rows
            pass
    rows: list[list[Any]] = []
    for part in parts:
        rows.extend(as_rows(part))
    return rows


def deal_columns(
    batch: pa.RecordBatch, kind: str, indexes: tuple[int, ...], n: int, start: int
) -> list[pa.RecordBatch]:
    """``batch``'s rows dealt over ``n`` tasks by fields (``indexes``) or in turn.

    The same task for each row as ``wiring.deal`` gives the row as a list: the fields'
    hash is the tuple path's CRC-32, and a shuffle starts at ``start``.
    """
    rows = batch.num_rows
    if kind == "fields":
        target = fields_hash(batch, list(indexes)).astype(np.int64) % n
    else:
        target = (np.arange(rows) + start) % n
    return [batch.take(np.flatnonzero(target == i)) for i in range(n)]
