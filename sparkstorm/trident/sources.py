"""What the coordinator runs each Trident spout as: a *batch source*, whatever its kind.

A user hands ``new_stream`` an ``IBatchSpout``, a partitioned spout, an ``ITridentSpout``
or a core ``Spout``; each is wrapped in the :class:`BatchSource` of its kind, which says
what the spout can do through the interfaces it implements (Storm's
``ICommitterTridentSpout``, ...), never through the names of its methods: a spout of
yours that happens to have a ``commit`` method is not taken for a committer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from sparkstorm.config import TOPOLOGY_SPOUT_MAX_BATCH_SIZE
from sparkstorm.topology.components import Spout
from sparkstorm.topology.fields import Fields
from sparkstorm.trident.spouts import (
    NON_TRANSACTIONAL,
    IBatchSpout,
    ICommitterBatchSpout,
    IPositionedBatchSpout,
)
from sparkstorm.trident.tuple import TridentCollector


class BatchSource(ABC):
    """One Trident spout as the coordinator runs it, in the coordinator's task."""

    guarantee: str
    """What its replays are: ``transactional`` (the same tuples), ``opaque`` (maybe
    others, each tuple in one committed batch), ``non-transactional`` (others)."""

    @abstractmethod
    def get_output_fields(self) -> Fields:
        """The fields of its tuples."""

    def open(self, conf: dict[str, Any], context: Any) -> None:  # noqa: B027 (optional)
        """Called once, in the coordinator's task, before the first batch."""

    def is_ready(self, txid: int) -> bool:
        """Whether batch ``txid`` may start (its source has something, say)."""
        return True

    @abstractmethod
    def emit_batch(self, txid: int, collector: TridentCollector) -> bool | None:
        """Emit batch ``txid`` (again, if it was emitted before).

        True: :meth:`snapshot` changed, and must be kept before the tuples leave; False:
        the batch was emitted again from what was kept (a replay, or a batch in flight
        when a previous coordinator stopped); None: neither.
        """

    def committed(self, txid: int) -> None:  # noqa: B027 (optional)
        """Every state wrote batch ``txid``: what :meth:`snapshot` keeps moves past it.

        Called (maybe again) before the progress is kept: nothing outside may change yet.
        """

    def ack(self, txid: int) -> None:  # noqa: B027 (optional)
        """Batch ``txid`` committed and the progress kept: tell the source (acks, offsets)."""

    def halt(self, reason: str) -> None:  # noqa: B027 (optional)
        """The topology stopped committing: a batch failed too often."""

    def close(self) -> None:  # noqa: B027 (optional)
        """The topology stops."""

    def snapshot(self) -> Any:
        """What the coordinator keeps with its progress (JSON); None: nothing."""
        return None

    def restore(self, saved: Any) -> None:  # noqa: B027 (optional)
        """Go on from what a previous coordinator kept (a restart, a lost worker)."""


class BatchSpoutSource(BatchSource):
    """An ``IBatchSpout``: a committer told of commits, a positioned one's position kept."""

    def __init__(self, spout: IBatchSpout) -> None:
        self.spout = spout
        self.guarantee = spout.guarantee
        self.emitted: set[int] = set()
        """The txids emitted and not committed yet: asked again, they are replays."""

    def get_output_fields(self) -> Fields:
        """The spout's fields."""
        return self.spout.get_output_fields()

    def open(self, conf: dict[str, Any], context: Any) -> None:
        """Open the spout."""
        self.spout.open(conf, context)

    def emit_batch(self, txid: int, collector: TridentCollector) -> bool | None:
        """The spout's batch; a positioned spout's new position is to be kept."""
        self.spout.emit_batch(txid, collector)
        if not isinstance(self.spout, IPositionedBatchSpout):
            return None
        new = txid not in self.emitted
        self.emitted.add(txid)
        return new

    def ack(self, txid: int) -> None:
        """A committer's ``commit``, then ``ack``."""
        self.emitted.discard(txid)
        if isinstance(self.spout, ICommitterBatchSpout):
            self.spout.commit(txid)
        self.spout.ack(txid)

    def halt(self, reason: str) -> None:
        """Tell the spout."""
        self.spout.halt(reason)

    def close(self) -> None:
        """Close the spout."""
        self.spout.close()

    def snapshot(self) -> Any:
        """A positioned spout's position."""
        if isinstance(self.spout, IPositionedBatchSpout):
            return self.spout.position()
        return None

    def restore(self, saved: Any) -> None:
        """A positioned spout goes back to where the kept position says."""
        if isinstance(self.spout, IPositionedBatchSpout) and saved is not None:
            self.spout.seek(saved)


class RichSpoutBatch(BatchSource):
    """A core :class:`~sparkstorm.Spout` read in batches: non-transactional (at-least-once).

    Each batch takes what ``next_tuple`` emits, up to ``topology.spout.max.batch.size``
    tuples (1000); the spout's message ids are acked once their batch committed, and
    failed when it failed; the spout replays them in a later batch, as Storm's
    ``RichSpoutBatchExecutor``.
    """

    guarantee = NON_TRANSACTIONAL

    def __init__(self, spout: Spout) -> None:
        self.spout = spout
        self.fields = _declared_fields(spout)
        self.batches: dict[int, list[Any]] = {}

    def get_output_fields(self) -> Fields:
        """The spout's default stream's fields."""
        return self.fields

    def open(self, conf: dict[str, Any], context: Any) -> None:
        """Open the spout with a collector that gathers its emits."""
        self.max_batch_size = conf[TOPOLOGY_SPOUT_MAX_BATCH_SIZE]
        self.collector = _GatheringCollector()
        self.spout.open(conf, context, self.collector)  # type: ignore[arg-type]
        self.spout.activate()

    def emit_batch(self, txid: int, collector: TridentCollector) -> None:
        """Fail what a previous attempt of ``txid`` took, then take a fresh batch."""
        for msg_id in self.batches.pop(txid, []):
            self.spout.fail(msg_id)
        gathered = self.collector.gathered
        for _ in range(self.max_batch_size):
            before = len(gathered)
            self.spout.next_tuple()
            if len(gathered) == before:
                break
        ids = []
        for values, msg_id in gathered:
            collector.emit(values)
            if msg_id is not None:
                ids.append(msg_id)
        gathered.clear()
        self.batches[txid] = ids

    def ack(self, txid: int) -> None:
        """Ack the batch's message ids to the spout."""
        for msg_id in self.batches.pop(txid, []):
            self.spout.ack(msg_id)

    def close(self) -> None:
        """Close the spout."""
        self.spout.close()


class _GatheringCollector:
    def __init__(self) -> None:
        self.gathered: list[tuple[list[Any], Any]] = []

    def emit(self, values: Any, msg_id: Any = None, stream: str = "default") -> list[int]:
        self.gathered.append((list(values), msg_id))
        return []

    def report_error(self, error: BaseException) -> None:
        raise error


def _declared_fields(spout: Spout) -> Fields:
    from sparkstorm.topology.declarers import OutputFieldsDeclarer

    declarer = OutputFieldsDeclarer("spout")
    spout.declare_output_fields(declarer)
    streams = declarer.streams
    if "default" not in streams:
        msg = f"{type(spout).__name__} declares no default stream for Trident to read"
        raise ValueError(msg)
    return streams["default"].fields


def batch_source(spout: Any, tx_id: str) -> BatchSource:
    """``spout`` (of ``new_stream(tx_id, ...)``) as the coordinator runs it.

    Which kind it is, is read from the interfaces it implements.
    """
    from sparkstorm.trident.coordinated import CoordinatedBatches, ITridentSpout
    from sparkstorm.trident.partitioned import (
        IOpaquePartitionedTridentSpout,
        IPartitionedTridentSpout,
        PartitionedBatches,
    )

    if isinstance(spout, IBatchSpout):
        return BatchSpoutSource(spout)
    if isinstance(spout, IPartitionedTridentSpout | IOpaquePartitionedTridentSpout):
        return PartitionedBatches(spout)
    if isinstance(spout, ITridentSpout):
        return CoordinatedBatches(spout, tx_id)
    if isinstance(spout, Spout):
        return RichSpoutBatch(spout)
    msg = (
        f"{type(spout).__name__} is not a Trident spout: pass an IBatchSpout, a "
        f"partitioned Trident spout, an ITridentSpout, or a core Spout"
    )
    raise TypeError(msg)
