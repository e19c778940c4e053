"""Fields grouping over columns: the same task for a row as for the tuple of its values.

The tuple path hashes a key with CRC-32 over its bytes (``topology/groupings.py``:
strings as UTF-8, ints as their decimal digits, chained over the grouped fields). Here
the same CRC-32 is computed for a whole column at once with numpy: a table-driven CRC
advanced one byte position at a time over every row still that long, so a column of
short keys costs a few array operations per byte of its longest key, and no Python call
per row. Types without a columnar form (floats, lists, ...) fall back to the tuple
path's hash, row by row, and say so in ``columnar_key``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkstorm.topology.groupings import stable_hash


def _table() -> np.ndarray[Any, np.dtype[np.uint32]]:
    table = np.zeros(256, np.uint32)
    for n in range(256):
        c = n
        for _ in range(8):
            c = 0xEDB88320 ^ (c >> 1) if c & 1 else c >> 1
        table[n] = c
    return table


_CRC_TABLE = _table()


def crc32_strings(
    column: pa.Array, crc: np.ndarray[Any, Any] | None = None
) -> np.ndarray[Any, Any]:
    """``zlib.crc32(value.encode(), crc)`` for every string of ``column``, as uint32."""
    column = column.cast(pa.large_string()) if pa.types.is_string(column.type) else column
    if column.null_count:
        msg = "a grouped column holds nulls: give every row a key"
        raise ValueError(msg)
    n = len(column)
    buffers = column.buffers()
    offsets = np.frombuffer(buffers[1], np.int64, n + 1, column.offset * 8)
    data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    state = np.full(n, 0xFFFFFFFF, np.uint32)
    if crc is not None:
        state ^= crc.astype(np.uint32)
    starts, lengths = offsets[:-1], np.diff(offsets)
    rows = np.arange(n)
    for position in range(int(lengths.max()) if n else 0):
        live = rows[lengths > position]
        byte = data[starts[live] + position]
        s = state[live]
        state[live] = _CRC_TABLE[(s ^ byte) & 0xFF] ^ (s >> 8)
    return state ^ np.uint32(0xFFFFFFFF)


def columnar_key(column: pa.Array) -> pa.Array | None:
    """``column`` as the strings the tuple path hashes, or None if it has no such form."""
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return column
    if pa.types.is_integer(kind):
        return pc.cast(column, pa.string())  # ints hash as their decimal digits
    if pa.types.is_dictionary(kind) and pa.types.is_string(kind.value_type):
        return pc.cast(column, pa.string())
    return None


def fields_hash(batch: pa.RecordBatch, indexes: list[int]) -> Any:
    """``stable_hash(row, indexes)`` of every row of ``batch``, as the tuple path has it."""
    crc: Any = None
    for i in indexes:
        key = columnar_key(batch.column(i))
        if key is None:  # no columnar form: the tuple path's own hash, row by row
            rows = zip(*(batch.column(j).to_pylist() for j in indexes), strict=True)
            return np.fromiter((stable_hash(row, range(len(indexes))) for row in rows), np.uint32)
        crc = crc32_strings(key, crc)
    assert crc is not None
    return crc
