"""Trident spouts over Kafka: a batch is a range of offsets in each partition.

``KafkaTridentSpoutTransactional`` (storm-kafka-client's name): each topic partition is
a Trident partition, and a batch's metadata is the offset range it read there
(``{"from": 120, "to": 169}``), kept in the checkpoint store before its tuples leave; a
replayed batch reads exactly that range again. ``KafkaTridentSpoutOpaque`` is the same
source as an opaque spout. Once a batch committed, its offsets are also committed to the
consumer group, so Kafka's own lag tools see the topology (unlike Storm's, STORM-2675);
a topology without kept ranges starts at the group's commit, else at the beginning.

Tuples are ``topic, partition, offset, key, value`` (key and value UTF-8 text; a record
that is not is emitted with its raw bytes).
"""

from __future__ import annotations

import time
from typing import Any

from typing_extensions import override

from sparkstorm.connectors.extra import missing_extra

try:
    from confluent_kafka import Consumer, KafkaException, TopicPartition
except ModuleNotFoundError as missing:  # the connectors extra is not installed
    raise missing_extra(missing, "Kafka connector") from None

from sparkstorm.connectors.kafka import DEFAULT_FIELDS
from sparkstorm.topology.fields import Fields
from sparkstorm.trident.partitioned import (
    IPartitionedTridentSpout,
    Meta,
    OpaqueOf,
    PartitionedCoordinator,
    RangeEmitter,
    TransactionalEmitter,
)
from sparkstorm.trident.tuple import TridentCollector
from sparkstorm.urls import checked_bootstrap_servers

CALL_SECS = 10.0
PARTITIONS_SECS = 10.0
"""How long the list of partitions is kept before it is asked again."""


def _consumer(servers: str, group_id: str, extra: dict[str, Any]) -> Any:
    return Consumer(
        {
            "bootstrap.servers": servers,
            "group.id": group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            **extra,
        }
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
        self.consumer.assign([TopicPartition(topic, partition, start)])
        got: list[Any] = []
        deadline = time.monotonic() + CALL_SECS
        while not got or got[-1].offset() < last:
            if time.monotonic() > deadline:
                msg = f"Kafka {topic}/{partition}: offsets {start}..{last} not read in time"
                raise TimeoutError(msg)
            for record in self.consumer.consume(min(last - start + 1, 1000), timeout=0.5):
                if record.error() is not None:
                    raise KafkaException(record.error())
                if record.offset() <= last:
                    got.append(record)
        return got

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
