"""Kafka in columns: ``KafkaArrowSpout`` and ``KafkaArrowBolt``, every record a message.

``KafkaArrowSpout`` is :class:`~sparkstorm.connectors.kafka.KafkaSpout` emitting record
batches: the same assignment, offsets, retries with backoff, dead letters, pauses and
commits (only below a partition's lowest pending offset), each record one row and one
message with its own outcome. A batch's keys and values are decoded to text at once;
a record that is not UTF-8 goes to the dead-letter topic alone, as with ``KafkaSpout``.

``KafkaArrowBolt`` produces each row of its input batches with the idempotent producer,
and acks a row once the broker confirmed its write; a delivery error fails that row
alone.
"""

from __future__ import annotations

import json
import time
from typing import Any, cast

import numpy as np
import pyarrow as pa

from sparkstorm.config import TOPOLOGY_TICK_TUPLE_FREQ_SECS
from sparkstorm.connectors.extra import missing_extra
from sparkstorm.connectors.kafka import (
    CALL_SECS,
    DEFAULT_FIELDS,
    QUEUE_FULL_SECS,
    KafkaSpout,
    KafkaSpoutConfig,
    ProcessingGuarantee,
    idempotent_producer,
)

try:
    from confluent_kafka import KafkaError, KafkaException
except ModuleNotFoundError as missing:  # pragma: no cover - sparkstorm.connectors.kafka says it
    raise missing_extra(missing, "Kafka connector") from None
from sparkstorm.reliability.batch_collectors import BatchSpoutOutputCollector
from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.topology.columnar import ArrowBolt, ArrowSpout
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import OutputFieldsDeclarer
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.tuple import Tuple
from sparkstorm.urls import checked_bootstrap_servers

BATCH_ROWS = 2000
"""Records a ``KafkaArrowSpout`` batch holds at most."""

SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("key", pa.string()),
        ("value", pa.string()),
    ]
)
"""The columns of a ``KafkaArrowSpout`` batch."""


class KafkaArrowSpout(ArrowSpout, KafkaSpout):
    """Reads Kafka as :class:`~sparkstorm.connectors.kafka.KafkaSpout`, a batch at a time.

    Columns ``topic, partition, offset, key, value`` (key and value UTF-8 text); each
    record's msg id is ``(topic, partition, offset)``, and each is acked, retried or
    dead-lettered alone. ``batch_rows`` bounds a batch; ``topology.max.spout.pending``
    counts records.

    Examples
    --------
    >>> config = KafkaSpoutConfig("127.0.0.1:9092", ["sentences"], "word-count")
    >>> spout = KafkaArrowSpout(config)

    .. versionadded:: 0.4.0
    """

    def __init__(self, config: KafkaSpoutConfig, batch_rows: int = BATCH_ROWS) -> None:
        if config.record_translator is not None:
            msg = (
                "KafkaArrowSpout: a record_translator works a record at a time; emit the "
                "default columns and translate them in an ArrowBolt"
            )
            raise ValueError(msg)
        if batch_rows < 1:
            msg = f"KafkaArrowSpout: batch_rows={batch_rows}; give at least 1"
            raise ValueError(msg)
        super().__init__(config)
        self.batch_rows = batch_rows

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """``topic, partition, offset, key, value``."""
        declarer.declare(Fields(list(DEFAULT_FIELDS)))

    def next_batch(self) -> None:
        """Emit the records due for a retry, or the next polled ones. Never waits."""
        now = time.monotonic()
        if not self._ready(now):
            return
        if self.retry_due and min(self.retry_due.values()) <= now:
            self._emit_retries(now)
            return
        self._poll(self.batch_rows)
        records: list[Any] = []
        while self.polled and len(records) < self.batch_rows:
            record = self.polled.popleft()
            part = self._admitted(record)
            if part is not None:
                if self.config.processing_guarantee is ProcessingGuarantee.AT_LEAST_ONCE:
                    part.pending[record.offset()] = (record, None)
                records.append(record)
        if records:
            self._emit_records(records)

    def _emit_retries(self, now: float) -> None:
        """Emit the records whose retry is due (at most ``batch_rows``), as one batch."""
        due = [key for key, at in self.retry_due.items() if at <= now][: self.batch_rows]
        records = []
        for key in due:
            del self.retry_due[key]
            self.attempts[key] = self.attempts.get(key, 1) + 1
            records.append(self.parts[key[:2]].pending[key[2]][0])
        self._emit_records(records, counted=True)

    def _emit_records(self, records: list[Any], counted: bool = False) -> None:
        """Emit ``records`` as one batch; an undecodable one is dead-lettered instead.

        A first attempt is not written in ``attempts`` (absent means 1), which spares a
        dict entry a record on the way every record takes.
        """
        batch, records = self._decoded(records)
        if batch is None:
            return
        collector = cast(BatchSpoutOutputCollector, self.collector)
        if self.config.processing_guarantee is ProcessingGuarantee.AT_LEAST_ONCE:
            ids = [(r.topic(), r.partition(), r.offset()) for r in records]
            collector.emit_batch(batch, ids)
        else:
            collector.emit_batch(batch)

    def _decoded(self, records: list[Any]) -> tuple[pa.RecordBatch | None, list[Any]]:
        """The batch of ``records`` (key and value as text), and the records in it."""
        keys = pa.array([r.key() for r in records], pa.binary())
        values = pa.array([r.value() for r in records], pa.binary())
        try:
            key_text, value_text = keys.cast(pa.string()), values.cast(pa.string())
        except pa.ArrowInvalid:  # some record is not UTF-8: find it, and set it aside
            kept = [r for r in records if self._decodable(r)]
            if len(kept) == len(records):  # pragma: no cover - pyarrow and Python agree
                raise
            return self._decoded(kept) if kept else (None, [])
        return records_batch(records, key_text, value_text), records

    def _decodable(self, record: Any) -> bool:
        """Whether ``record``'s key and value are UTF-8; if not, it is dead-lettered."""
        try:
            for raw in (record.key(), record.value()):
                if raw is not None:
                    raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._undecodable(record, exc)
            self._done((record.topic(), record.partition(), record.offset()))
            return False
        return True

    def ack_batch(self, msg_ids: list[Any]) -> None:
        """Records whose trees completed: each is done."""
        parts, attempts = self.parts, self.attempts
        for msg_id in msg_ids:
            part = parts.get(msg_id[:2])
            if part is not None:
                part.pending.pop(msg_id[2], None)
            if attempts:
                attempts.pop(msg_id, None)
                self.retry_due.pop(msg_id, None)


class KafkaArrowBolt(ArrowBolt):
    """Produces each row of its input batches to ``topic``; acks a row once written.

    ``key_field`` and ``value_field`` name the columns written (a missing key column
    writes no key): text as UTF-8, binary as it is, numbers as their text, anything
    else as JSON. A delivery error, or a write refused, fails its row alone.

    .. versionadded:: 0.4.0
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        key_field: str = "key",
        value_field: str = "value",
        *,
        flush_secs: float = 0.1,
        extra: dict[str, Any] | None = None,
    ) -> None:
        checked_bootstrap_servers("KafkaArrowBolt", bootstrap_servers)
        self.bootstrap_servers, self.topic = bootstrap_servers, topic
        self.key_field, self.value_field = key_field, value_field
        self.flush_secs, self.extra = flush_secs, extra or {}

    def get_component_configuration(self) -> dict[str, Any]:
        """A tick every ``flush_secs``: delivery reports are served at least that often."""
        return {TOPOLOGY_TICK_TUPLE_FREQ_SECS: self.flush_secs}

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Make the idempotent producer."""
        self.collector = collector
        self.component = context.get_this_component_id()
        self.producer = idempotent_producer(self.bootstrap_servers, self.extra)

    def execute(self, tup: Tuple) -> None:
        """A tick: serve the delivery reports (rows written are acked)."""
        self.producer.poll(0)

    def execute_batch(self, batch: pa.RecordBatch) -> None:
        """Produce every row (one ``produce_batch``); each is acked or failed on its report."""
        values = self._column(batch, self.value_field, required=True)
        keys = self._column(batch, self.key_field, required=False)
        writes = _Writes(self, batch, keys, values)
        messages = [{"key": k, "value": v} for k, v in zip(keys, values, strict=True)]
        self._produce(messages, list(range(len(messages))), writes)
        writes.all_produced()
        self.producer.poll(0)

    def _produce(self, messages: list[dict[str, Any]], rows: list[int], writes: _Writes) -> None:
        """Hand ``messages`` (of ``rows``) to the producer.

        A full queue is waited on, serving reports, for up to ``QUEUE_FULL_SECS``; a
        message the producer refuses fails its row.
        """
        deadline = 0.0
        sending = messages
        while True:
            queued = self.producer.produce_batch(self.topic, sending, on_delivery=writes.report)
            if queued == len(sending):
                return
            full = []
            for row, message in zip(rows, sending, strict=True):
                error = message.pop("_error", None)
                if error is None:
                    continue
                if error.code() == KafkaError._QUEUE_FULL:
                    full.append(row)
                else:
                    writes.refused(row, KafkaException(error))
            now = time.monotonic()
            deadline = deadline or now + QUEUE_FULL_SECS
            if not full or now >= deadline:
                for row in full:
                    writes.refused(row, BufferError("the producer's queue stayed full"))
                return
            self.producer.poll(0.01)
            rows, sending = full, [messages[row] for row in full]

    def _column(self, batch: pa.RecordBatch, name: str, required: bool) -> list[Any]:
        """Column ``name`` as the producer takes it: str, bytes or None a row."""
        index = batch.schema.get_field_index(name)
        if index < 0:
            if not required:
                return [None] * batch.num_rows
            msg = (
                f"KafkaArrowBolt {self.component!r}: its input has no column {name!r} (it has "
                f"{batch.schema.names}); give value_field the column to write"
            )
            raise KeyError(msg)
        column = batch.column(index)
        kind = column.type
        types = pa.types
        if types.is_integer(kind) or types.is_boolean(kind) or types.is_floating(kind):
            column = column.cast(pa.string())
        elif not (
            types.is_string(kind)
            or types.is_large_string(kind)
            or types.is_binary(kind)
            or types.is_large_binary(kind)
        ):
            return [None if v is None else json.dumps(v) for v in column.to_pylist()]
        values: list[Any] = column.to_pylist()
        return values

    def cleanup(self) -> None:
        """Wait for the writes under way (their rows are acked or failed)."""
        self.producer.flush(CALL_SECS)


class _Writes:
    """One input batch's writes: its rows are acked once every delivery report is in.

    A report does not say which row it is of, so a failed write is found by its key
    and value: a row of the same key and value as a failed one is failed too (written
    again on the replay: at-least-once).
    """

    def __init__(
        self, bolt: KafkaArrowBolt, batch: pa.RecordBatch, keys: list[Any], values: list[Any]
    ) -> None:
        self.bolt, self.batch = bolt, batch
        self.keys, self.values = keys, values
        self.left = batch.num_rows
        self.produced = False
        self.failed = np.zeros(batch.num_rows, bool)
        self.errors: list[str] = []

    def report(self, error: Any, message: Any) -> None:
        """A delivery report of one of the batch's rows."""
        if error is not None:
            self.errors.append(error.str())
            key, value = message.key(), message.value()
            for row, (k, v) in enumerate(zip(self.keys, self.values, strict=True)):
                if _same(k, key) and _same(v, value):
                    self.failed[row] = True
        self.left -= 1
        if self.produced and self.left == 0:
            self._settle()

    def refused(self, row: int, exc: Exception) -> None:
        """The producer refused row ``row``'s write: it gets no report."""
        self.errors.append(str(exc))
        self.failed[row] = True
        self.left -= 1

    def all_produced(self) -> None:
        """Every row was handed to the producer; settle now if every report is in."""
        self.produced = True
        if self.left == 0:
            self._settle()

    def _settle(self) -> None:
        collector, batch = self.bolt.collector, self.batch
        if self.failed.any():
            collector.report_error(
                ConnectionError(
                    f"KafkaArrowBolt {self.bolt.component!r}: {int(self.failed.sum())} of "
                    f"{batch.num_rows} writes to {self.bolt.topic!r} failed ({self.errors[0]}); "
                    "their rows are failed"
                )
            )
            collector.fail_rows(self.failed, "kafka delivery failed", batch=batch)  # type: ignore[attr-defined]
        if not self.failed.all():
            collector.ack_rows(~self.failed, batch=batch)  # type: ignore[attr-defined]


def _same(written: Any, reported: bytes | None) -> bool:
    """Whether a row's ``written`` key or value is the ``reported`` bytes."""
    if written is None or reported is None:
        return written is reported
    return (written.encode("utf-8") if isinstance(written, str) else written) == reported


def records_batch(records: list[Any], keys: pa.Array, values: pa.Array) -> pa.RecordBatch:
    """Kafka ``records`` as columns ``topic, partition, offset, key, value``.

    Their ``keys`` and ``values`` come as columns already (text, or bytes).
    """
    columns = [
        pa.array([r.topic() for r in records], pa.string()),
        pa.array([r.partition() for r in records], pa.int32()),
        pa.array([r.offset() for r in records], pa.int64()),
        keys,
        values,
    ]
    return pa.RecordBatch.from_arrays(columns, names=SCHEMA.names)
