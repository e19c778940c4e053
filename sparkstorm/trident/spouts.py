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
from sparkstorm.errors import BatchFailedTooOften
from sparkstorm.topology.fields import Fields
from sparkstorm.trident import driving
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

    def halt(self, reason: str) -> None:  # noqa: B027 (optional)
        """The topology stopped committing: a batch failed too often (``reason`` says why).

        After ``sparkstorm.trident.max.attempts`` failures of one batch.

        .. versionadded:: 0.4.0
        """

    def close(self) -> None:  # noqa: B027 (optional)
        """Called when the topology stops."""

    @abstractmethod
    def get_output_fields(self) -> Fields:
        """The fields of its tuples."""


class ICommitterBatchSpout(IBatchSpout):
    """A batch spout told of each commit before its ``ack`` (Storm's ``ICommitterTridentSpout``).

    .. versionadded:: 0.4.0
    """

    @abstractmethod
    def commit(self, batch_id: int) -> None:
        """Batch ``batch_id`` committed in every state."""


class IPositionedBatchSpout(IBatchSpout):
    """A batch spout whose position the coordinator keeps with the topology's progress.

    ``position()`` is kept (as JSON) before a new batch's tuples leave, and with every
    commit; a new copy of the spout (a restart, a lost worker, a rebalance) is given the
    last one kept (``seek``) before its first batch. Its replays then hold the same
    tuples, and it goes on where the committed batches ended.

    .. versionadded:: 0.4.0
    """

    @abstractmethod
    def position(self) -> Any:
        """Where it is, and what each batch not yet acked holds (JSON)."""

    @abstractmethod
    def seek(self, position: Any) -> None:
        """Go back to ``position``, as :meth:`position` gave it."""


class FixedBatchSpout(IPositionedBatchSpout):
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
        self.batches: dict[int, tuple[int, int]] = {}
        """Each batch not yet acked: (its first tuple's index, how many)."""

    def set_cycle(self, cycle: bool) -> None:
        """Start again from the first tuple once all were emitted."""
        self.cycle = cycle

    def emit_batch(self, batch_id: int, collector: TridentCollector) -> None:
        """Emit the next ``max_batch_size`` tuples, or batch ``batch_id``'s again."""
        batch = self.batches.get(batch_id)
        if batch is None:
            if self.index >= len(self.outputs) and self.cycle:
                self.index = 0
            count = min(self.max_batch_size, len(self.outputs) - self.index)
            batch = self.batches[batch_id] = (self.index, count)
            self.index += count
        first, count = batch
        for values in self.outputs[first : first + count]:
            collector.emit(values)

    def ack(self, batch_id: int) -> None:
        """Forget batch ``batch_id``."""
        self.batches.pop(batch_id, None)

    def position(self) -> dict[str, Any]:
        """The next tuple's index, and each batch not yet acked."""
        return {"index": self.index, "batches": [[t, *b] for t, b in self.batches.items()]}

    def seek(self, position: dict[str, Any]) -> None:
        """Go back to ``position``."""
        self.index = int(position["index"])
        self.batches = {int(t): (int(first), int(count)) for t, first, count in position["batches"]}

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


class FeederCommitterBatchSpout(FeederBatchSpout, ICommitterBatchSpout):
    """A :class:`FeederBatchSpout` told of each commit (Storm's ``ICommitterTridentSpout``).

    .. versionadded:: 0.3.0
    """

    def commit(self, batch_id: int) -> None:
        """Batch ``batch_id`` committed (called before ``ack``)."""
