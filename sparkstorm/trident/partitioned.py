"""Partitioned Trident spouts: transactional and opaque (Storm 2's interfaces, in Python).

A partitioned spout's source is split into partitions (a stream each, a queue each, ...).
For every batch the coordinator asks its emitter for each partition's next batch and
keeps each partition's *metadata*, the batch's range there, which must be JSON. The
metadata of a batch is in the checkpoint store before any of its tuples leave (with the
last committed txid), so that after a failure, or a restart of the coordinator:

- a transactional spout emits the same batch again from its metadata
  (``re_emit_partition_batch``): its replays have the same tuples;
- an opaque spout emits a new batch from the metadata of the batch before
  (``emit_batch_new`` again): its replays may differ, which only an opaque state takes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from typing_extensions import override

from sparkstorm.topology.fields import Fields
from sparkstorm.trident.sources import BatchSource
from sparkstorm.trident.spouts import OPAQUE, TRANSACTIONAL
from sparkstorm.trident.tuple import TridentCollector

Meta = Any
"""A partition's metadata for one batch: JSON (a range, an offset, ...)."""


class Partition(ABC):
    """One partition of a partitioned spout's source."""

    @abstractmethod
    def get_id(self) -> str:
        """A name that stays the same across runs."""


class PartitionedCoordinator(ABC):
    """Knows the source's partitions (Storm's spout ``Coordinator``)."""

    @abstractmethod
    def get_partitions_for_batch(self) -> Any:
        """What the emitter needs to know the partitions (JSON-able, or any object)."""

    def is_ready(self, txid: int) -> bool:
        """Whether batch ``txid`` may start (the source has something, say)."""
        return True

    def close(self) -> None:  # noqa: B027 (optional)
        """Release what the coordinator holds."""


class PartitionedEmitter(ABC):
    """Emits each partition's part of a batch (Storm's spout ``Emitter``)."""

    @abstractmethod
    def get_ordered_partitions(self, all_partition_info: Any) -> list[Partition]:
        """The partitions, in an order every task agrees on."""

    def get_partitions_for_task(
        self, task_id: int, num_tasks: int, ordered: list[Partition]
    ) -> list[Partition]:
        """The partitions of task ``task_id`` (here one task emits them all)."""
        return ordered[task_id::num_tasks]

    def refresh_partitions(self, mine: list[Partition]) -> None:  # noqa: B027 (optional)
        """The partitions this emitter emits from now on."""

    def committed(self, txid: int, metas: dict[str, Meta]) -> None:  # noqa: B027 (optional)
        """Batch ``txid`` committed; ``metas`` is each partition's metadata as of it.

        For a source that keeps progress of its own, as Kafka's consumer groups do.
        """

    @abstractmethod
    def emit_batch_new(
        self,
        tx: int,
        collector: TridentCollector,
        partitions: list[Partition],
        last_meta_by_partition: dict[str, Meta],
    ) -> dict[str, Meta]:
        """Emit batch ``tx`` after each partition's last batch; its metadata by partition id."""

    def close(self) -> None:  # noqa: B027 (optional)
        """Release what the emitter holds."""


class TransactionalEmitter(PartitionedEmitter):
    """A transactional spout's emitter: it can emit a batch again from its metadata."""

    @abstractmethod
    def re_emit_partition_batch(
        self, tx: int, collector: TridentCollector, partition: Partition, meta: Meta
    ) -> None:
        """Emit exactly the tuples of the batch ``meta`` describes, again."""


class NamedPartition(Partition):
    """A partition known by its name alone (a stream, ``topic/partition``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    @override
    def get_id(self) -> str:
        return self.name


class NamedPartitions(PartitionedCoordinator):
    """A fixed list of partitions, by name."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    @override
    def get_partitions_for_batch(self) -> list[str]:
        return self.names


class RangeEmitter(TransactionalEmitter):
    """An emitter whose batch in a partition is a range of the source's positions.

    Its metadata is ``{"from": first, "to": last}`` (positions: ids, sequence numbers,
    offsets); an empty batch is ``{"from": None, "to": where it was}``. A replay reads
    the range again. Subclasses read and emit.
    """

    @abstractmethod
    def read_after(self, partition: str, last: Meta | None) -> tuple[list[Any], Any, Any]:
        """Up to a batch of records after ``last``, with the first and last positions.

        ``last`` is None before the partition's first batch (read from where the source
        starts); without records, ``([], None, the last position)``.
        """

    @abstractmethod
    def read_range(self, partition: str, first: Any, last: Any) -> list[Any]:
        """The records from position ``first`` to ``last``, both included."""

    @abstractmethod
    def emit_records(self, collector: TridentCollector, records: list[Any]) -> None:
        """Emit ``records`` as tuples."""

    @override
    def get_ordered_partitions(self, all_partition_info: Any) -> list[Partition]:
        return [NamedPartition(name) for name in all_partition_info]

    @override
    def emit_batch_new(
        self,
        tx: int,
        collector: TridentCollector,
        partitions: list[Partition],
        last_meta_by_partition: dict[str, Meta],
    ) -> dict[str, Meta]:
        metas: dict[str, Meta] = {}
        for partition in partitions:
            name = partition.get_id()
            records, first, last = self.read_after(name, last_meta_by_partition.get(name))
            self.emit_records(collector, records)
            metas[name] = {"from": first, "to": last}
        return metas

    @override
    def re_emit_partition_batch(
        self, tx: int, collector: TridentCollector, partition: Partition, meta: Meta
    ) -> None:
        if meta.get("from") is not None:
            self.emit_records(
                collector, self.read_range(partition.get_id(), meta["from"], meta["to"])
            )


class IPartitionedTridentSpout(ABC):
    """A transactional partitioned spout: a replayed batch has the same tuples.

    .. versionadded:: 0.3.0
    """

    guarantee = TRANSACTIONAL

    @abstractmethod
    def get_coordinator(self, conf: dict[str, Any], context: Any) -> PartitionedCoordinator:
        """The coordinator, made in the task that runs the batches."""

    @abstractmethod
    def get_emitter(self, conf: dict[str, Any], context: Any) -> TransactionalEmitter:
        """The emitter, made in the task that runs the batches."""

    @abstractmethod
    def get_output_fields(self) -> Fields:
        """The fields of its tuples."""


class IOpaquePartitionedTridentSpout(ABC):
    """An opaque partitioned spout: a replayed batch may have other tuples.

    .. versionadded:: 0.3.0
    """

    guarantee = OPAQUE

    @abstractmethod
    def get_coordinator(self, conf: dict[str, Any], context: Any) -> PartitionedCoordinator:
        """The coordinator, made in the task that runs the batches."""

    @abstractmethod
    def get_emitter(self, conf: dict[str, Any], context: Any) -> PartitionedEmitter:
        """The emitter, made in the task that runs the batches."""

    @abstractmethod
    def get_output_fields(self) -> Fields:
        """The fields of its tuples."""


class OpaqueOf(IOpaquePartitionedTridentSpout):
    """A transactional partitioned spout's source, offered as an opaque spout.

    A replay reads on from the batch before it (``emit_batch_new`` again), so it may
    hold other tuples: only an opaque state takes it.

    .. versionadded:: 0.3.0
    """

    def __init__(self, transactional: IPartitionedTridentSpout) -> None:
        self.inner = transactional

    @override
    def get_coordinator(self, conf: dict[str, Any], context: Any) -> PartitionedCoordinator:
        return self.inner.get_coordinator(conf, context)

    @override
    def get_emitter(self, conf: dict[str, Any], context: Any) -> PartitionedEmitter:
        return self.inner.get_emitter(conf, context)

    @override
    def get_output_fields(self) -> Fields:
        return self.inner.get_output_fields()


class PartitionedBatches(BatchSource):
    """Runs a partitioned spout in the coordinator, keeping each batch's metadata."""

    def __init__(self, spout: IPartitionedTridentSpout | IOpaquePartitionedTridentSpout) -> None:
        self.spout = spout
        self.guarantee = spout.guarantee
        self.fields = spout.get_output_fields()

    def get_output_fields(self) -> Fields:
        """The spout's fields."""
        return self.fields

    def open(self, conf: dict[str, Any], context: Any) -> None:
        """Make the coordinator and the emitter."""
        self.coordinator = self.spout.get_coordinator(conf, context)
        self.emitter = self.spout.get_emitter(conf, context)
        self.last: dict[str, Meta] = {}
        """Each partition's metadata as of the last committed batch."""
        self.pending: dict[int, dict[str, Meta]] = {}
        """Each batch in flight's metadata, by partition."""

    def partitions(self) -> list[Partition]:
        """The partitions now (they may change between batches)."""
        ordered = self.emitter.get_ordered_partitions(self.coordinator.get_partitions_for_batch())
        mine = self.emitter.get_partitions_for_task(0, 1, ordered)
        self.emitter.refresh_partitions(mine)
        return mine

    def is_ready(self, txid: int) -> bool:
        """Whether the source has a batch for ``txid``."""
        return txid in self.pending or self.coordinator.is_ready(txid)

    def emit_batch(self, txid: int, collector: TridentCollector) -> bool:
        """Emit batch ``txid`` (again, if it is in flight); whether its metadata is new."""
        partitions = self.partitions()
        metas = self.pending.get(txid)
        if metas is not None and self.guarantee == TRANSACTIONAL:
            emitter = self.emitter
            assert isinstance(emitter, TransactionalEmitter)
            for partition in partitions:
                meta = metas.get(partition.get_id())
                if meta is not None:
                    emitter.re_emit_partition_batch(txid, collector, partition, meta)
            return False
        before = self.pending.get(txid - 1, self.last)
        last = {p.get_id(): before.get(p.get_id()) for p in partitions}
        self.pending[txid] = self.emitter.emit_batch_new(txid, collector, partitions, last)
        return True

    def committed(self, txid: int) -> None:
        """Batch ``txid`` committed: its metadata is the partitions' last committed."""
        self.last.update(self.pending.pop(txid, {}))

    def ack(self, txid: int) -> None:
        """The progress is kept: the emitter may record it (Kafka's group offsets)."""
        self.emitter.committed(txid, self.last)

    def close(self) -> None:
        """Close the coordinator and the emitter."""
        self.coordinator.close()
        self.emitter.close()

    def snapshot(self) -> dict[str, Any]:
        """What the checkpoint store keeps: committed and in-flight metadata."""
        return {"committed": self.last, "pending": [[t, m] for t, m in self.pending.items()]}

    def restore(self, saved: dict[str, Any]) -> None:
        """Carry on from what a previous coordinator kept."""
        self.last = dict(saved.get("committed", {}))
        self.pending = {int(t): metas for t, metas in saved.get("pending", [])}
