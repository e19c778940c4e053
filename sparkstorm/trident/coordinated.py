"""``ITridentSpout``: Storm's most general Trident spout, a coordinator and an emitter.

The coordinator decides each batch's *metadata* (``initialize_transaction``), which the
coordinator keeps with the topology's progress before the batch's tuples leave; the
emitter emits the batch from it (``emit_batch``). A batch replayed (a failure, a
restart, a lost worker) is emitted again from the same metadata, never initialized
again: with an emitter that emits the same tuples from the same metadata, the spout is
transactional (the default ``guarantee``); say ``opaque`` otherwise.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from sparkstorm.topology.fields import Fields
from sparkstorm.trident.sources import BatchSource
from sparkstorm.trident.spouts import TRANSACTIONAL
from sparkstorm.trident.tuple import TridentCollector


@dataclass(frozen=True)
class TransactionAttempt:
    """A batch's txid and which attempt of it this is (Storm's ``TransactionAttempt``).

    .. versionadded:: 0.4.0
    """

    txid: int
    attempt_id: int

    def get_transaction_id(self) -> int:
        """The batch's txid."""
        return self.txid

    def get_attempt_id(self) -> int:
        """0 for the first attempt, 1 for the first replay, ..."""
        return self.attempt_id


class BatchCoordinator(ABC):
    """Decides each batch's metadata (Storm's ``ITridentSpout.BatchCoordinator``).

    .. versionadded:: 0.4.0
    """

    @abstractmethod
    def initialize_transaction(self, txid: int, prev_metadata: Any, curr_metadata: Any) -> Any:
        """The metadata of new batch ``txid`` (JSON), given the batch before's.

        ``curr_metadata`` is None here: a batch that has metadata is never initialized
        again (Storm passes what a previous coordinator left).
        """

    def success(self, txid: int) -> None:  # noqa: B027 (optional)
        """Batch ``txid`` committed."""

    def is_ready(self, txid: int) -> bool:
        """Whether batch ``txid`` may start."""
        return True

    def close(self) -> None:  # noqa: B027 (optional)
        """Release what it holds."""


class Emitter(ABC):
    """Emits a batch from its metadata (Storm's ``ITridentSpout.Emitter``).

    .. versionadded:: 0.4.0
    """

    @abstractmethod
    def emit_batch(
        self, tx: TransactionAttempt, coordinator_meta: Any, collector: TridentCollector
    ) -> None:
        """Emit the tuples of the batch ``coordinator_meta`` describes."""

    def success(self, tx: TransactionAttempt) -> None:  # noqa: B027 (optional)
        """The batch committed."""

    def close(self) -> None:  # noqa: B027 (optional)
        """Release what it holds."""


class ITridentSpout(ABC):
    """A spout of your own: a coordinator and an emitter (Storm's ``ITridentSpout``).

    .. versionadded:: 0.4.0
    """

    guarantee = TRANSACTIONAL
    """``transactional`` if the emitter emits the same tuples from the same metadata."""

    @abstractmethod
    def get_coordinator(self, tx_state_id: str, conf: dict[str, Any], context: Any) -> Any:
        """The :class:`BatchCoordinator`, made in the task that runs the batches."""

    @abstractmethod
    def get_emitter(self, tx_state_id: str, conf: dict[str, Any], context: Any) -> Any:
        """The :class:`Emitter`, made in the task that runs the batches."""

    @abstractmethod
    def get_output_fields(self) -> Fields:
        """The fields of its tuples."""


class CoordinatedBatches(BatchSource):
    """Runs an ``ITridentSpout`` in the coordinator, keeping each batch's metadata."""

    def __init__(self, spout: ITridentSpout, tx_id: str) -> None:
        self.spout, self.tx_id = spout, tx_id
        self.guarantee = spout.guarantee
        self.fields = spout.get_output_fields()

    def get_output_fields(self) -> Fields:
        """The spout's fields."""
        return self.fields

    def open(self, conf: dict[str, Any], context: Any) -> None:
        """Make the coordinator and the emitter."""
        self.coordinator: BatchCoordinator = self.spout.get_coordinator(self.tx_id, conf, context)
        self.emitter: Emitter = self.spout.get_emitter(self.tx_id, conf, context)
        self.last: Any = None
        """The metadata of the last committed batch."""
        self.pending: dict[int, Any] = {}
        """Each batch in flight's metadata."""
        self.attempts: dict[int, int] = {}

    def is_ready(self, txid: int) -> bool:
        """Whether the batch has metadata already, or the coordinator says it may start."""
        return txid in self.pending or self.coordinator.is_ready(txid)

    def emit_batch(self, txid: int, collector: TridentCollector) -> bool:
        """Emit the batch from its metadata, initialized first if it is new."""
        new = txid not in self.pending
        if new:
            before = self.pending.get(txid - 1, self.last)
            self.pending[txid] = self.coordinator.initialize_transaction(txid, before, None)
        attempt = self.attempts[txid] = self.attempts.get(txid, -1) + 1
        self.emitter.emit_batch(TransactionAttempt(txid, attempt), self.pending[txid], collector)
        return new

    def committed(self, txid: int) -> None:
        """Its metadata is the last committed batch's."""
        if txid in self.pending:
            self.last = self.pending.pop(txid)

    def ack(self, txid: int) -> None:
        """Tell the coordinator and the emitter."""
        self.coordinator.success(txid)
        self.emitter.success(TransactionAttempt(txid, self.attempts.pop(txid, 0)))

    def close(self) -> None:
        """Close the coordinator and the emitter."""
        self.coordinator.close()
        self.emitter.close()

    def snapshot(self) -> dict[str, Any]:
        """The last committed batch's metadata, and each in flight's."""
        return {"last": self.last, "pending": [[t, m] for t, m in self.pending.items()]}

    def restore(self, saved: dict[str, Any]) -> None:
        """Go on from what a previous coordinator kept."""
        self.last = saved.get("last")
        self.pending = {int(t): meta for t, meta in saved.get("pending", [])}
