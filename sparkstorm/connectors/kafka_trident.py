"""Trident spouts over Kafka: a batch is a range of offsets in each partition.

``KafkaTridentSpoutTransactional`` (storm-kafka-client's name): each topic partition is
a Trident partition, and a batch's metadata is the offset range it read there
(``{"from": 120, "to": 169}``), kept in the checkpoint store before its tuples leave; a
replayed batch reads exactly that range again. ``KafkaTridentSpoutOpaque`` is the same
source as an opaque spout; ``KafkaArrowTridentSpoutTransactional`` and
``KafkaArrowTridentSpoutOpaque`` emit each batch partition as a record batch. Once a
batch committed, its offsets are also committed to the consumer group, so Kafka's own
lag tools see the topology (unlike Storm's, STORM-2675); a topology without kept ranges
starts at the group's commit, else at the beginning.

Tuples are ``topic, partition, offset, key, value`` (key and value UTF-8 text; a record
that is not is emitted with its raw bytes).

The sink, ``TridentKafkaStateFactory`` with ``TridentKafkaStateUpdater``, writes tuples
to a topic in each batch's commit: at-least-once, or with ``transactional=True`` in a
Kafka transaction tied to the batch's txid (exactly once for ``read_committed`` readers).
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from typing_extensions import override

from sparkstorm.connectors.extra import missing_extra

try:
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic
except ModuleNotFoundError as missing:  # the connectors extra is not installed
    raise missing_extra(missing, "Kafka connector") from None

from sparkstorm.config import TOPOLOGY_NAME
from sparkstorm.connectors.kafka import DEFAULT_FIELDS, WRITTEN_AS_IS, as_json_bytes
from sparkstorm.connectors.kafka_arrow import records_batch
from sparkstorm.connectors.kafka_client_log import with_client_log
from sparkstorm.topology.fields import Fields
from sparkstorm.trident.operations import BaseStateUpdater
from sparkstorm.trident.partitioned import (
    IPartitionedTridentSpout,
    Meta,
    OpaqueOf,
    PartitionedCoordinator,
    RangeEmitter,
    TransactionalEmitter,
)
from sparkstorm.trident.spouts import NON_TRANSACTIONAL, TRANSACTIONAL
from sparkstorm.trident.state.base import State, StateFactory, StateStore
from sparkstorm.trident.tuple import TridentCollector, TridentTuple
from sparkstorm.urls import checked_bootstrap_servers

CALL_SECS = 10.0
PARTITIONS_SECS = 10.0
"""How long the list of partitions is kept before it is asked again."""


def _consumer(servers: str, group_id: str, extra: dict[str, Any]) -> Any:
    """A consumer that reads given ranges: assigned only while it reads one.

    ``fetch.wait.max.ms`` is short because it never waits for records to come: a range
    is read below the high watermark. A fetch the broker holds would hold the next
    request on the connection (a watermark, the next range) behind it.
    """
    return Consumer(
        with_client_log(
            {
                "bootstrap.servers": servers,
                "group.id": group_id,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "fetch.wait.max.ms": 10,
                **extra,
            }
        )
    )


class _Partitions(PartitionedCoordinator):
    """Every partition of the topics, named ``topic/partition``, refreshed now and then."""

    def __init__(self, servers: str, topics: list[str], extra: dict[str, Any]) -> None:
        self.consumer = _consumer(servers, "sparkstorm-metadata", extra)
        self.topics = topics
        self.known: list[str] = []
        self.asked = 0.0

    @override
    def get_partitions_for_batch(self) -> list[str]:
        if time.monotonic() >= self.asked + PARTITIONS_SECS or not self.known:
            metadata = self.consumer.list_topics(timeout=CALL_SECS)
            self.known = [
                f"{t}/{p}"
                for t in self.topics
                if t in metadata.topics
                for p in sorted(metadata.topics[t].partitions)
            ]
            self.asked = time.monotonic()
        return self.known

    @override
    def close(self) -> None:
        self.consumer.close()


def _split(partition_id: str) -> tuple[str, int]:
    topic, _, number = partition_id.rpartition("/")
    return topic, int(number)


class _Emitter(RangeEmitter):
    def __init__(
        self, servers: str, group_id: str, max_batch_size: int, extra: dict[str, Any]
    ) -> None:
        self.consumer = _consumer(servers, group_id, extra)
        self.max_batch_size = max_batch_size

    def _start(self, topic: str, partition: int, last: Meta | None) -> tuple[int, int]:
        """Where the partition's next batch starts, and its end (the high watermark)."""
        low, high = self.consumer.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=CALL_SECS
        )
        if last is not None:
            return max(last["to"] + 1, low), high
        (kept,) = self.consumer.committed([TopicPartition(topic, partition)], timeout=CALL_SECS)
        return max(kept.offset, low), high

    def _read(self, topic: str, partition: int, start: int, last: int) -> list[Any]:
        """The records from ``start`` to ``last``, both included (fewer if some are gone)."""
        return _read_records(self.consumer, topic, partition, start, last)

    @override
    def read_after(self, partition: str, last: Meta | None) -> tuple[list[Any], Any, Any]:
        topic, number = _split(partition)
        start, high = self._start(topic, number, last)
        if start >= high:
            return [], None, start - 1
        records = self._read(topic, number, start, min(high, start + self.max_batch_size) - 1)
        return records, records[0].offset(), records[-1].offset()

    @override
    def read_range(self, partition: str, first: Any, last: Any) -> list[Any]:
        return self._read(*_split(partition), first, last)

    @override
    def emit_records(self, collector: TridentCollector, records: list[Any]) -> None:
        for r in records:
            key, value = r.key(), r.value()
            collector.emit([r.topic(), r.partition(), r.offset(), _text(key), _text(value)])

    @override
    def committed(self, txid: int, metas: dict[str, Meta]) -> None:
        offsets = [
            TopicPartition(*_split(name), meta["to"] + 1)
            for name, meta in metas.items()
            if meta and meta.get("to") is not None and meta["to"] >= 0
        ]
        if offsets:
            self.consumer.commit(offsets=offsets, asynchronous=True)

    @override
    def close(self) -> None:
        self.consumer.close()


def _read_records(consumer: Any, topic: str, partition: int, start: int, last: int) -> list[Any]:
    """The records of ``topic/partition`` from ``start`` to ``last``, both included."""
    consumer.assign([TopicPartition(topic, partition, start)])
    got: list[Any] = []
    deadline = time.monotonic() + CALL_SECS
    while not got or got[-1].offset() < last:
        if time.monotonic() > deadline:
            msg = f"Kafka {topic}/{partition}: offsets {start}..{last} not read in time"
            raise TimeoutError(msg)
        for record in consumer.consume(min(last - start + 1, 1000), timeout=0.5):
            if record.error() is not None:
                raise KafkaException(record.error())
            if record.offset() <= last:
                got.append(record)
    consumer.unassign()  # no fetch past the range, held by the broker, between batches
    return got


def _text(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


class KafkaTridentSpoutTransactional(IPartitionedTridentSpout):
    """A transactional Trident spout over Kafka topics (storm-kafka-client's name).

    Examples
    --------
    >>> spout = KafkaTridentSpoutTransactional("127.0.0.1:9092", ["sentences"], "counts")

    .. versionadded:: 0.3.0
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topics: str | list[str],
        group_id: str,
        *,
        max_batch_size: int = 10_000,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.servers = checked_bootstrap_servers(type(self).__name__, bootstrap_servers)
        self.group_id = group_id
        self.topics = [topics] if isinstance(topics, str) else list(topics)
        self.max_batch_size, self.extra = max_batch_size, extra or {}

    @override
    def get_coordinator(self, conf: dict[str, Any], context: Any) -> PartitionedCoordinator:
        return _Partitions(self.servers, self.topics, self.extra)

    @override
    def get_emitter(self, conf: dict[str, Any], context: Any) -> TransactionalEmitter:
        return _Emitter(self.servers, self.group_id, self.max_batch_size, self.extra)

    @override
    def get_output_fields(self) -> Fields:
        return Fields(list(DEFAULT_FIELDS))


class _ColumnsEmitter(_Emitter):
    """Emits a partition's records of a batch as one record batch."""

    @override
    def emit_records(self, collector: TridentCollector, records: list[Any]) -> None:
        if not records:
            return
        keys = pa.array([r.key() for r in records], pa.binary())
        values = pa.array([r.value() for r in records], pa.binary())
        with contextlib.suppress(pa.ArrowInvalid):  # one not UTF-8: the batch's are bytes
            keys, values = keys.cast(pa.string()), values.cast(pa.string())
        collector.emit_batch(records_batch(records, keys, values))


class KafkaArrowTridentSpoutTransactional(KafkaTridentSpoutTransactional):
    """:class:`KafkaTridentSpoutTransactional` in columns: a batch is a record batch.

    The same offset ranges, replays and exactly-once; the records of a batch partition
    are emitted as one ``pyarrow.RecordBatch`` of ``topic, partition, offset, key,
    value``, which stays columns through columnar operations (``BaseArrowFunction``,
    ``Count``...) with no tuple a row. Keys and values are text; a batch holding a
    record that is not UTF-8 has them as bytes, and goes on as rows.

    Examples
    --------
    >>> spout = KafkaArrowTridentSpoutTransactional("127.0.0.1:9092", "sentences", "counts")

    .. versionadded:: 0.5.0
    """

    @override
    def get_emitter(self, conf: dict[str, Any], context: Any) -> TransactionalEmitter:
        return _ColumnsEmitter(self.servers, self.group_id, self.max_batch_size, self.extra)


class KafkaTridentSpoutOpaque(OpaqueOf):
    """The same source as an opaque spout (storm-kafka-client's ``KafkaTridentSpoutOpaque``).

    .. versionadded:: 0.3.0
    """

    def __init__(
        self, bootstrap_servers: str, topics: str | list[str], group_id: str, **options: Any
    ) -> None:
        super().__init__(
            KafkaTridentSpoutTransactional(bootstrap_servers, topics, group_id, **options)
        )


class KafkaArrowTridentSpoutOpaque(OpaqueOf):
    """:class:`KafkaTridentSpoutOpaque` in columns.

    See :class:`KafkaArrowTridentSpoutTransactional`.

    .. versionadded:: 0.5.0
    """

    def __init__(
        self, bootstrap_servers: str, topics: str | list[str], group_id: str, **options: Any
    ) -> None:
        super().__init__(
            KafkaArrowTridentSpoutTransactional(bootstrap_servers, topics, group_id, **options)
        )


# -- progress in Kafka: a topology reading and writing Kafka needs nothing else ---------
PROGRESS_TOPIC = "sparkstorm-trident-progress.{topology}"
"""The compacted one-partition topic a Kafka-writing topology keeps its progress in."""


def progress_topic(topology: str) -> str:
    """The progress topic of ``topology`` (Kafka's legal characters only)."""
    return PROGRESS_TOPIC.format(topology=re.sub(r"[^a-zA-Z0-9._-]", "_", topology))[:249]


class KafkaProgress:
    """Trident's progress (the last committed txid, the spouts' ranges) in Kafka itself.

    Each write is one record, ``{"txid": N, "sources": {...}}``, to the topology's own
    compacted topic (:func:`progress_topic`, made on first use with the broker's
    replication), produced with ``acks=all`` and flushed before the write returns; the
    progress is the newest record. So a Kafka -> Trident -> Kafka topology keeps every
    range before its batch leaves, and every commit, where its data is, and a driver on
    any host goes on from them.

    A retry may write a record twice, which leaves the newest record as it was, so the
    producer is not idempotent: an idempotent one holds its first write until it has a
    producer id, 0.5 s added to the first batch of every run.
    """

    def __init__(self, servers: str, topology: str, extra: dict[str, Any]) -> None:
        self.servers, self.extra = servers, extra
        self.topic = progress_topic(topology)
        self.producer: Any = None
        self.consumer: Any = None
        self.newest: dict[str, Any] | None = None
        """What this process last wrote or read (it is the only writer of its run)."""

    def _open(self) -> None:
        if self.producer is not None:
            return
        admin = AdminClient(with_client_log({"bootstrap.servers": self.servers, **self.extra}))
        topic = NewTopic(self.topic, 1, -1, config={"cleanup.policy": "compact"})
        for future in admin.create_topics([topic], request_timeout=CALL_SECS).values():
            try:
                future.result(CALL_SECS)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
        self.producer = Producer(
            with_client_log(
                {
                    "bootstrap.servers": self.servers,
                    "acks": "all",
                    # one request at a time, each flushed before the next write: in order
                    # without idempotence, whose producer id held the first write 0.5 s
                    "max.in.flight.requests.per.connection": 1,
                    **self.extra,
                }
            )
        )
        self.consumer = _consumer(self.servers, "sparkstorm-trident-progress", self.extra)

    def _read_newest(self) -> dict[str, Any]:
        if self.newest is None:
            self._open()
            low, high = self.consumer.get_watermark_offsets(
                TopicPartition(self.topic, 0), timeout=CALL_SECS
            )
            found: dict[str, Any] = {}
            if high > low:
                (record,) = _read_records(self.consumer, self.topic, 0, high - 1, high - 1)[-1:]
                found = json.loads(record.value())
            self.newest = found
        return self.newest

    def committed_txid(self) -> int:
        """The last committed txid (-1 before the first)."""
        return int(self._read_newest().get("txid", -1))

    def committed_sources(self) -> dict[str, Any]:
        """The spouts' metadata written with the last write."""
        sources: dict[str, Any] = self._read_newest().get("sources", {})
        return sources

    def mark_committed(self, txid: int, sources: dict[str, Any] | None = None) -> None:
        """``txid`` committed, with the spouts' metadata: one record, on the broker."""
        self._open()
        value = {"txid": txid, "sources": sources or {}}
        failed: list[str] = []

        def report(error: Any, message: Any) -> None:
            if error is not None:
                failed.append(error.str())

        self.producer.produce(self.topic, json.dumps(value).encode(), b"progress", 0, report)
        left = self.producer.flush(CALL_SECS)
        if left or failed:
            why = failed[0] if failed else "not confirmed in time"
            msg = f"Trident progress in Kafka topic {self.topic!r}: the write failed: {why}"
            raise ConnectionError(msg)
        self.newest = value


class _KafkaProgressKeeper:
    """What a Kafka sink gives ``StateStore.keeper``: the topology's :class:`KafkaProgress`."""

    def __init__(self, servers: str, extra: dict[str, Any]) -> None:
        self.servers, self.extra = servers, extra

    def progress_store(self, topology: str) -> KafkaProgress:
        return KafkaProgress(self.servers, topology, self.extra)


# -- the sink: storm-kafka-client's TridentKafkaState ---------------------------------
class TridentKafkaState(State):
    """Writes a batch partition's tuples to a Kafka topic in the batch's commit.

    At-least-once: the writes are flushed before the commit returns, and a failed write
    fails the batch, whose replay writes again. ``transactional``: the writes go in a
    Kafka transaction, committed with the batch's txid as the offset of a consumer group
    of the partition's own (``sparkstorm-trident-TRANSACTIONAL_ID``), so a replayed txid
    that already committed is skipped, and a ``read_committed`` consumer sees each
    tuple once. Its transactional id (``sparkstorm-TOPOLOGY-TOPIC-PARTITION``) is the
    same in a restarted run: starting fences the producers of the runs before.

    .. versionadded:: 0.4.0
    """

    def __init__(self, factory: TridentKafkaStateFactory, topology: str, index: int) -> None:
        self.factory = factory
        self.transactional_id = f"sparkstorm-{topology}-{factory.topic}-{index}"
        self.group = f"sparkstorm-trident-{self.transactional_id}"
        self.producer: Any = None
        self.last_txid: int | None = None
        self.skipping = False
        self.open_transaction = False
        """A transaction begun and not committed: its batch failed before the commit."""
        self.failed: list[str] = []

    def __getstate__(self) -> dict[str, Any]:
        """A copy (a task's snapshot) makes its own producer, fencing this one's."""
        kept = ("factory", "transactional_id", "group", "last_txid")
        return {key: self.__dict__[key] for key in kept}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.producer, self.skipping, self.open_transaction, self.failed = None, False, False, []

    def _open(self) -> None:
        """The producer, and the last txid a transaction committed.

        A transactional producer fences every producer of its id before it.
        """
        factory = self.factory
        settings = {"bootstrap.servers": factory.servers, "linger.ms": 5, **factory.extra}
        if factory.transactional:
            settings["transactional.id"] = self.transactional_id
        self.producer = Producer(with_client_log(settings))
        if not factory.transactional:
            return
        self.producer.init_transactions(CALL_SECS)
        self.marker = _consumer(factory.servers, self.group, factory.extra)
        (kept,) = self.marker.committed([TopicPartition(factory.topic, 0)], timeout=CALL_SECS)
        self.last_txid = kept.offset if kept.offset >= 0 else 0

    @override
    def begin_commit(self, txid: int | None) -> None:
        if self.producer is None:
            self._open()
        self.failed = []
        self.skipping = bool(
            self.factory.transactional and txid is not None and txid <= (self.last_txid or 0)
        )
        if self.factory.transactional and not self.skipping:
            if self.open_transaction:  # what an attempt that failed wrote: never seen
                self.producer.abort_transaction(CALL_SECS)
            self.producer.begin_transaction()
            self.open_transaction = True

    def write(self, tuples: list[TridentTuple]) -> None:
        """Produce each tuple's key and value (skipped in a txid committed already)."""
        if self.skipping:
            return
        factory, producer = self.factory, self.producer
        for tup in tuples:
            key = tup.get(factory.key_field) if factory.key_field else None
            value = tup.get(factory.value_field)
            if value.__class__ not in WRITTEN_AS_IS:
                value = as_json_bytes(value)
            if key.__class__ not in WRITTEN_AS_IS:
                key = as_json_bytes(key)
            while True:
                try:
                    producer.produce(factory.topic, value, key, on_delivery=self._report)
                    break
                except BufferError:  # the queue is full: let the broker catch up
                    producer.poll(0.01)

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Produce a columnar batch partition's keys and values, a call per 10,000.

        No tuple per row: ``produce_batch`` takes ``PRODUCE_BATCH`` records a call.
        Skipped in a txid committed already, as :meth:`write` is.
        """
        if self.skipping:
            return
        factory = self.factory
        values = _written_column(batch, factory.value_field)
        keys = _written_column(batch, factory.key_field) if factory.key_field else None
        for start in range(0, len(values), PRODUCE_BATCH):
            part = values[start : start + PRODUCE_BATCH]
            if keys is None:
                messages = [{"value": value} for value in part]
            else:
                key_part = keys[start : start + PRODUCE_BATCH]
                messages = [{"value": v, "key": k} for v, k in zip(part, key_part, strict=True)]
            self._produce_all(messages)

    def _produce_all(self, messages: list[dict[str, Any]]) -> None:
        """``produce_batch`` until every message is queued; a full queue is let drain."""
        producer, topic = self.producer, self.factory.topic
        while messages:
            try:
                queued = producer.produce_batch(topic, messages, on_delivery=self._report)
            except BufferError:
                queued = 0
            if queued == len(messages):
                return
            left = [m for m in messages if "_error" in m] if queued else messages
            for message in left:
                if message.pop("_error").code() != KafkaError._QUEUE_FULL:
                    self.failed.append(f"{len(left)} records not queued")
                    return
            producer.poll(0.01)
            messages = left

    def _report(self, error: Any, message: Any) -> None:
        if error is not None:
            self.failed.append(error.str())

    @override
    def commit(self, txid: int | None) -> None:
        if self.skipping:
            self.skipping = False
            return
        factory, producer = self.factory, self.producer
        try:
            if factory.transactional:
                assert txid is not None
                marker = [TopicPartition(factory.topic, 0, txid)]
                meta = self.marker.consumer_group_metadata()
                producer.send_offsets_to_transaction(marker, meta, CALL_SECS)
                producer.commit_transaction(CALL_SECS)
                self.last_txid, self.open_transaction = txid, False
                return
            left = producer.flush(CALL_SECS)
        except Exception:
            self._drop()  # a transaction that failed half way: aborted when the next starts
            raise
        if left or self.failed:
            why = self.failed[0] if self.failed else f"{left} writes not confirmed in time"
            msg = f"TridentKafkaState: writing to {factory.topic!r} failed: {why}"
            raise ConnectionError(msg)

    def _drop(self) -> None:
        if self.factory.transactional:
            self.marker.close()
        self.producer, self.open_transaction = None, False  # the next producer fences it


PRODUCE_BATCH = 10_000
"""Records a ``produce_batch`` call hands the client (its queue holds 100,000)."""

_AS_IS = (
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_binary,
    pa.types.is_large_binary,
)


def _written_column(batch: pa.RecordBatch, name: str) -> list[Any]:
    """Column ``name`` as the producer writes it: text and bytes as they are, else JSON."""
    column = batch.column(name)
    values: list[Any] = column.to_pylist()
    if any(kind(column.type) for kind in _AS_IS):
        return values
    return [None if value is None else as_json_bytes(value) for value in values]


class TridentKafkaStateFactory(StateFactory):
    """storm-kafka-client's Trident Kafka sink: ``partition_persist`` writes tuples to Kafka.

    ``value_field`` (and ``key_field``) name the tuple fields written: str as UTF-8, bytes
    as they are, the rest as JSON. ``transactional=True`` writes each batch in a Kafka
    transaction tied to its txid: exactly once for ``read_committed`` consumers.

    Examples
    --------
    >>> factory = TridentKafkaStateFactory("127.0.0.1:9092", "counts", value_field="line")
    >>> # stream.partition_persist(factory, Fields("line"), TridentKafkaStateUpdater())

    .. versionadded:: 0.4.0
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        *,
        key_field: str | None = None,
        value_field: str,
        extra: dict[str, Any] | None = None,
        transactional: bool = False,
    ) -> None:
        self.servers = checked_bootstrap_servers(type(self).__name__, bootstrap_servers)
        self.topic, self.key_field, self.value_field = topic, key_field, value_field
        self.extra, self.transactional = extra or {}, transactional

    @override
    def make_state(
        self, conf: dict[str, Any], metrics: Any, partition_index: int, num_partitions: int
    ) -> State:
        return TridentKafkaState(self, conf.get(TOPOLOGY_NAME) or "topology", partition_index)

    @override
    def state_type(self) -> str:
        return TRANSACTIONAL if self.transactional else NON_TRANSACTIONAL

    @override
    def store(self) -> StateStore:
        """Kafka: the topology's progress is kept there too (:class:`KafkaProgress`)."""
        keeper = _KafkaProgressKeeper(self.servers, self.extra)
        return StateStore("kafka", {"url": self.servers}, self.topic, keeper)

    @override
    def committed_items(self) -> Iterator[tuple[list[Any], Any]]:
        msg = (
            f"TridentKafkaStateFactory writes to Kafka topic {self.topic!r}: read it there "
            "(with isolation.level read_committed for a transactional one)"
        )
        raise NotImplementedError(msg)


class TridentKafkaStateUpdater(BaseStateUpdater):
    """Writes a batch partition's tuples with its ``TridentKafkaState`` (Storm's updater).

    .. versionadded:: 0.4.0
    """

    @override
    def update_state(
        self, state: Any, tuples: list[TridentTuple], collector: TridentCollector
    ) -> None:
        _kafka_state(state).write(tuples)

    @override
    def update_batch(self, state: Any, batch: pa.RecordBatch, collector: TridentCollector) -> None:
        """A columnar stream's batch partition, written without a tuple per row."""
        _kafka_state(state).write_batch(batch)


def _kafka_state(state: Any) -> TridentKafkaState:
    if not isinstance(state, TridentKafkaState):
        msg = (
            f"TridentKafkaStateUpdater writes a TridentKafkaState, not a "
            f"{type(state).__name__}: persist with a TridentKafkaStateFactory"
        )
        raise TypeError(msg)
    return state
