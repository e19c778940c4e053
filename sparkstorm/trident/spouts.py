"""Trident's spouts: ``IBatchSpout``, the test spouts, and core spouts wrapped for batches.

A batch spout runs in the coordinator (one task): asked for batch ``txid``, it emits the
batch's tuples; asked again for the same txid (a replay), it must emit the same tuples
for exactly-once with a transactional state; ``ack(txid)`` comes once the batch
committed.
"""

from __future__ import annotations

import threading
import uuid
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from sparkstorm.control import mailbox
from sparkstorm.topology.components import Spout
from sparkstorm.topology.fields import Fields
from sparkstorm.trident import driving
from sparkstorm.trident.coordinator import BatchFailedTooOften
from sparkstorm.trident.tuple import TridentCollector

TRANSACTIONAL, OPAQUE, NON_TRANSACTIONAL = "transactional", "opaque", "non-transactional"


class IBatchSpout(ABC):
    """A spout that emits a batch at a time (Storm's ``IBatchSpout``).

    It is transactional if a replayed txid gets the same tuples.

    .. versionadded:: 0.3.0
    """

    guarantee = TRANSACTIONAL
    """What its replays are: the same tuples (transactional) or not."""

    def open(self, conf: dict[str, Any], context: Any) -> None:  # noqa: B027 (optional)
        """Called once before the first batch."""

    @abstractmethod
    def emit_batch(self, batch_id: int, collector: TridentCollector) -> None:
        """Emit batch ``batch_id``'s tuples (the same ones again if it was emitted before)."""

    def ack(self, batch_id: int) -> None:  # noqa: B027 (optional)
        """Batch ``batch_id`` committed: forget it."""

    def close(self) -> None:  # noqa: B027 (optional)
        """Called when the topology stops."""

    @abstractmethod
    def get_output_fields(self) -> Fields:
        """The fields of its tuples."""


class FixedBatchSpout(IBatchSpout):
    """Emits the tuples it was given, ``max_batch_size`` at a time (Storm's test spout).

    Examples
    --------
    >>> spout = FixedBatchSpout(Fields("sentence"), 2, ["a b"], ["c"], ["d"])
    >>> spout.set_cycle(False)

    .. versionadded:: 0.3.0
    """

    def __init__(self, fields: Fields | list[str], max_batch_size: int, *tuples: Any) -> None:
        self.fields = fields if isinstance(fields, Fields) else Fields(fields)
        self.max_batch_size = max_batch_size
        self.outputs = [list(t) for t in tuples]
        self.cycle = False
        self.index = 0
        self.batches: dict[int, list[list[Any]]] = {}

    def set_cycle(self, cycle: bool) -> None:
        """Start again from the first tuple once all were emitted."""
        self.cycle = cycle

    def emit_batch(self, batch_id: int, collector: TridentCollector) -> None:
        """Emit the next ``max_batch_size`` tuples, or batch ``batch_id``'s again."""
        batch = self.batches.get(batch_id)
        if batch is None:
            batch = []
            if self.index >= len(self.outputs) and self.cycle:
                self.index = 0
            while self.index < len(self.outputs) and len(batch) < self.max_batch_size:
                batch.append(self.outputs[self.index])
                self.index += 1
            self.batches[batch_id] = batch
        for values in batch:
            collector.emit(values)

    def ack(self, batch_id: int) -> None:
        """Forget batch ``batch_id``."""
        self.batches.pop(batch_id, None)

    def get_output_fields(self) -> Fields:
        """The fields it was given."""
        return self.fields


@dataclass
class _Feed:
    queue: deque[tuple[int, list[list[Any]]]] = field(default_factory=deque)
    batches: dict[int, tuple[int, list[list[Any]]]] = field(default_factory=dict)
    committed: set[int] = field(default_factory=set)
    halted: str | None = None
    fed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


_FEEDS: dict[str, _Feed] = {}
"""Each feeder's batches, shared by its copies in this process (Storm's registry)."""


class FeederBatchSpout(IBatchSpout):
    """A batch spout fed from a test: ``feed(tuples)`` returns once that batch committed.

    .. versionadded:: 0.3.0
    """

    def __init__(self, fields: Fields | list[str]) -> None:
        self.fields = fields if isinstance(fields, Fields) else Fields(fields)
        self.feed_id = uuid.uuid4().hex
        self.wait_to_emit = True
        _FEEDS[self.feed_id] = _Feed()
        self.address = mailbox.serve(self.feed_id, self._serve)

    @property
    def _feed(self) -> _Feed:
        return _FEEDS.setdefault(self.feed_id, _Feed())

    def set_wait_to_emit(self, wait: bool) -> None:
        """False: batches go on while nothing is fed (empty ones); True (the default): not."""
        self.wait_to_emit = wait

    def feed(self, tuples: list[list[Any]], timeout: float | None = None) -> None:
        """Emit ``tuples`` as one batch; returns once it committed (the topology runs meanwhile)."""
        feed = self._feed
        with feed.lock:
            feed.fed += 1
            number = feed.fed
            feed.queue.append((number, [list(t) for t in tuples]))
        driving.run_until(
            lambda: number in feed.committed or feed.halted is not None, timeout, f"feed #{number}"
        )
        if number not in feed.committed:
            raise BatchFailedTooOften(feed.halted)

    def emit_batch(self, batch_id: int, collector: TridentCollector) -> None:
        """Emit the next fed batch, or batch ``batch_id``'s again."""
        for values in mailbox.call(self.address, self.feed_id, ("batch", batch_id)):
            collector.emit(values)

    def ack(self, batch_id: int) -> None:
        """Batch ``batch_id`` committed: its ``feed`` returns."""
        mailbox.call(self.address, self.feed_id, ("ack", batch_id))

    def halt(self, reason: str) -> None:
        """The topology stopped: a batch failed too often (``feed`` raises ``reason``)."""
        mailbox.call(self.address, self.feed_id, ("halt", reason))

    def _serve(self, call: tuple[str, Any]) -> list[list[Any]]:
        """In the test's process: the batch for a txid, its commit, or a stop."""
        kind, batch_id = call
        feed = self._feed
        with feed.lock:
            if kind == "halt":
                feed.halted = batch_id
                return []
            if kind == "ack":
                done = feed.batches.pop(batch_id, None)
                if done is not None:
                    feed.committed.add(done[0])
                return []
            if batch_id not in feed.batches:
                if not feed.queue:
                    return []
                feed.batches[batch_id] = feed.queue.popleft()
            return feed.batches[batch_id][1]

    def get_output_fields(self) -> Fields:
        """The fields it was given."""
        return self.fields


class FeederCommitterBatchSpout(FeederBatchSpout):
    """A :class:`FeederBatchSpout` told of each commit (Storm's ``ICommitterTridentSpout``).

    .. versionadded:: 0.3.0
    """

    def commit(self, batch_id: int) -> None:
        """Batch ``batch_id`` committed (called before ``ack``)."""


class RichSpoutBatch(IBatchSpout):
    """A core :class:`~sparkstorm.Spout` read in batches: non-transactional (at-least-once).

    Each batch takes what ``next_tuple`` emits, up to ``topology.max.spout.pending`` ...
    the spout's message ids are acked once their batch committed, and failed when it
    failed; the spout replays them in a later batch, as Storm's ``RichSpoutBatchExecutor``.
    """

    guarantee = NON_TRANSACTIONAL

    def __init__(self, spout: Spout, max_batch_size: int = 1000) -> None:
        self.spout = spout
        self.max_batch_size = max_batch_size
        self.fields = _declared_fields(spout)
        self.batches: dict[int, list[Any]] = {}

    def open(self, conf: dict[str, Any], context: Any) -> None:
        """Open the spout with a collector that gathers its emits."""
        self.collector = _GatheringCollector()
        self.spout.open(conf, context, self.collector)  # type: ignore[arg-type]
        self.spout.activate()

    def emit_batch(self, batch_id: int, collector: TridentCollector) -> None:
        """Fail what a previous attempt of ``batch_id`` took, then take a fresh batch."""
        for msg_id in self.batches.pop(batch_id, []):
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
        self.batches[batch_id] = ids

    def ack(self, batch_id: int) -> None:
        """Ack the batch's message ids to the spout."""
        for msg_id in self.batches.pop(batch_id, []):
            self.spout.ack(msg_id)

    def close(self) -> None:
        """Close the spout."""
        self.spout.close()

    def get_output_fields(self) -> Fields:
        """The spout's default stream's fields."""
        return self.fields


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


def as_batch_spout(spout: Any) -> IBatchSpout:
    """``spout`` as a batch spout: itself, or a core spout wrapped as non-transactional."""
    if isinstance(spout, IBatchSpout):
        return spout
    from sparkstorm.trident.partitioned import (
        IOpaquePartitionedTridentSpout,
        IPartitionedTridentSpout,
        PartitionedBatches,
    )

    if isinstance(spout, IPartitionedTridentSpout | IOpaquePartitionedTridentSpout):
        return PartitionedBatches(spout)  # type: ignore[return-value]
    if isinstance(spout, Spout):
        return RichSpoutBatch(spout)
    msg = (
        f"{type(spout).__name__} is not a Trident spout: pass an IBatchSpout, a "
        f"partitioned Trident spout, or a core Spout"
    )
    raise TypeError(msg)
