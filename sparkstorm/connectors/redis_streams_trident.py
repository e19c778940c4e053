"""Trident spouts over Redis Streams: a batch is a range of entry ids in each stream.

``RedisStreamTridentSpout`` is transactional: each stream is a partition, a batch's
metadata is the id range it read there (``{"from": id, "to": id}``), kept in the
checkpoint store before the batch's tuples leave, and a replayed batch reads exactly
that range again (``XRANGE from to``). Entries are never acknowledged or deleted: the
stream is the log, and the committed ranges say how far the topology got. Trim the
stream (``XTRIM``) below the committed range if it must not grow.
``RedisStreamOpaqueTridentSpout`` is the same source as an opaque spout: a replay reads
on from the batch before, so it may hold other entries.

Tuples are ``[id, data]`` (the entry id, its fields as a dict), as ``RedisStreamSpout``'s.
``RedisStreamArrowTridentSpout`` (and ``...OpaqueTridentSpout``) emits a batch partition
as a record batch instead: the entry id and the ``fields`` it is given, a column each.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from typing_extensions import override

from sparkstorm.state.redis_store import redis_client
from sparkstorm.topology.fields import Fields
from sparkstorm.trident.partitioned import (
    IPartitionedTridentSpout,
    Meta,
    NamedPartitions,
    OpaqueOf,
    PartitionedCoordinator,
    RangeEmitter,
    TransactionalEmitter,
)
from sparkstorm.trident.tuple import TridentCollector


class _Emitter(RangeEmitter):
    def __init__(self, url: str, max_batch_size: int, decode: str | None) -> None:
        self.client = redis_client({"url": url}, 30.0)
        self.max_batch_size, self.decode = max_batch_size, decode

    @override
    def read_after(self, partition: str, last: Meta | None) -> tuple[list[Any], Any, Any]:
        after = (last or {}).get("to") or "0-0"
        entries = self.client.xrange(partition, f"({after}", "+", count=self.max_batch_size)
        if not entries:
            return [], None, after
        return entries, entries[0][0].decode(), entries[-1][0].decode()

    @override
    def read_range(self, partition: str, first: Any, last: Any) -> list[Any]:
        return self.client.xrange(partition, first, last)  # type: ignore[no-any-return]

    @override
    def emit_records(self, collector: TridentCollector, records: list[Any]) -> None:
        decode = self.decode
        for entry_id, fields in records:
            if decode is not None:
                entry_id = entry_id.decode(decode)
                fields = {k.decode(decode): v.decode(decode) for k, v in fields.items()}
            collector.emit([entry_id, fields])


class _ColumnsEmitter(_Emitter):
    """Emits a partition's entries of a batch as one record batch.

    The id, and a column per field named (null where an entry lacks it).
    """

    def __init__(self, url: str, max_batch_size: int, decode: str | None, fields: list[str]):
        super().__init__(url, max_batch_size, decode)
        self.fields = [name.encode() for name in fields]

    @override
    def emit_records(self, collector: TridentCollector, records: list[Any]) -> None:
        if not records:
            return
        columns = [pa.array([entry_id for entry_id, _ in records], pa.binary())]
        for name in self.fields:
            columns.append(pa.array([data.get(name) for _, data in records], pa.binary()))
        if self.decode is not None:  # utf-8: a column not UTF-8 stays bytes
            columns = [_text_or_bytes(column) for column in columns]
        names = ["id", *(name.decode() for name in self.fields)]
        collector.emit_batch(pa.RecordBatch.from_arrays(columns, names=names))


def _text_or_bytes(column: pa.Array) -> pa.Array:
    try:
        return column.cast(pa.string())
    except pa.ArrowInvalid:
        return column


class RedisStreamTridentSpout(IPartitionedTridentSpout):
    """A transactional Trident spout over Redis streams, each stream a partition.

    Examples
    --------
    >>> spout = RedisStreamTridentSpout("redis://127.0.0.1:6379/0", ["sentences"])

    .. versionadded:: 0.3.0
    """

    def __init__(
        self,
        url: str,
        streams: str | list[str],
        *,
        max_batch_size: int = 10_000,
        decode: str | None = "utf-8",
    ) -> None:
        self.url = url
        self.streams = [streams] if isinstance(streams, str) else list(streams)
        self.max_batch_size, self.decode = max_batch_size, decode

    @override
    def get_coordinator(self, conf: dict[str, Any], context: Any) -> PartitionedCoordinator:
        return NamedPartitions(self.streams)

    @override
    def get_emitter(self, conf: dict[str, Any], context: Any) -> TransactionalEmitter:
        return _Emitter(self.url, self.max_batch_size, self.decode)

    @override
    def get_output_fields(self) -> Fields:
        return Fields("id", "data")


class RedisStreamOpaqueTridentSpout(OpaqueOf):
    """The same source as an opaque spout: a replay reads on from the batch before it.

    .. versionadded:: 0.3.0
    """

    def __init__(self, url: str, streams: str | list[str], **options: Any) -> None:
        super().__init__(RedisStreamTridentSpout(url, streams, **options))


class RedisStreamArrowTridentSpout(RedisStreamTridentSpout):
    """:class:`RedisStreamTridentSpout` in columns: a batch partition is a record batch.

    Its fields are ``id`` and the entry fields in ``fields``, a column each (text, or
    bytes with ``decode=None``; null where an entry lacks the field). The same id
    ranges, replays and exactly-once; the columns go on through columnar operations
    with no tuple a row.

    Examples
    --------
    >>> spout = RedisStreamArrowTridentSpout("redis://127.0.0.1:6379/0", "s", ["sentence"])

    .. versionadded:: 0.5.0
    """

    def __init__(
        self,
        url: str,
        streams: str | list[str],
        fields: list[str],
        *,
        max_batch_size: int = 10_000,
        decode: str | None = "utf-8",
    ) -> None:
        if decode not in (None, "utf-8"):
            msg = f"RedisStreamArrowTridentSpout: decode={decode!r}; columns are 'utf-8' or None"
            raise ValueError(msg)
        super().__init__(url, streams, max_batch_size=max_batch_size, decode=decode)
        self.fields = list(fields)

    @override
    def get_emitter(self, conf: dict[str, Any], context: Any) -> TransactionalEmitter:
        return _ColumnsEmitter(self.url, self.max_batch_size, self.decode, self.fields)

    @override
    def get_output_fields(self) -> Fields:
        return Fields("id", *self.fields)


class RedisStreamArrowOpaqueTridentSpout(OpaqueOf):
    """:class:`RedisStreamArrowTridentSpout` as an opaque spout.

    .. versionadded:: 0.5.0
    """

    def __init__(self, url: str, streams: str | list[str], fields: list[str], **options: Any):
        super().__init__(RedisStreamArrowTridentSpout(url, streams, fields, **options))
