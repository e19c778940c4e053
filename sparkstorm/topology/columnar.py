"""``ArrowSpout`` and ``ArrowBolt``: components that take and emit Arrow record batches.

Every row a spout emits with a message id is one message, tracked by the acker as a
tuple is: acked, or failed back to its spout with a reason, alone. A bolt settles each
input row once (``ack_batch``, ``ack_rows(mask)``, ``fail_rows(mask, reason)``) and
anchors output rows to input rows (``emit_batch(batch, anchors=rows)``). Streams mix:
an ``ArrowBolt`` may take a tuple stream (its tuples arrive as a record batch of the
declared fields) and a plain ``Bolt`` an Arrow stream (one ``Tuple`` a row).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING

from sparkstorm.topology.components import Bolt, Spout

if TYPE_CHECKING:
    import pyarrow as pa

    from sparkstorm._types import MsgId
    from sparkstorm.topology.tuple import Tuple


class ArrowSpout(Spout):
    """A spout that emits record batches (``collector.emit_batch(batch, msg_ids=...)``).

    ``next_batch`` is called as ``next_tuple`` is (it must not block, and may emit
    nothing); ``ack(msg_id)`` and ``fail(msg_id, reason)`` come once per message, as a
    spout's do. ``topology.max.spout.pending`` counts rows: it is checked before each
    ``next_batch``, so a batch may go past it by its own size.

    Examples
    --------
    >>> import pyarrow as pa
    >>> class Numbers(ArrowSpout):
    ...     def open(self, conf, context, collector):
    ...         self.collector, self.next = collector, 0
    ...     def next_batch(self):
    ...         ids = list(range(self.next, self.next + 100))
    ...         self.collector.emit_batch(pa.record_batch([pa.array(ids)], names=["n"]), ids)
    ...         self.next += 100

    .. versionadded:: 0.4.0
    """

    @abstractmethod
    def next_batch(self) -> None:
        """Emit the next record batch, if there is one (``collector.emit_batch``)."""

    def next_tuple(self) -> None:
        """The engines ask a spout for its next emits: the next batch."""
        self.next_batch()

    def ack_batch(self, msg_ids: list[MsgId]) -> None:
        """Messages whose trees completed, told at once: ``ack(msg_id)`` for each.

        Override it to take them in one call (a source that acks in bulk); ``fail`` is
        told per message, with its reason.
        """
        ack = self.ack
        for msg_id in msg_ids:
            ack(msg_id)


class ArrowBolt(Bolt):
    """A bolt that takes record batches (``execute_batch``) and emits them.

    Its collector emits (``emit_batch(batch, anchors=rows, stream=...)``: output row i
    anchored to input row ``rows[i]``) and settles each input row once
    (``ack_batch(batch)``, ``ack_rows(mask)``, ``fail_rows(mask, reason)``). A row
    failed fails its own message alone; a row left unsettled times out, as a tuple
    never acked does.

    .. versionadded:: 0.4.0
    """

    @abstractmethod
    def execute_batch(self, batch: pa.RecordBatch) -> None:
        """Process one record batch of an input stream (its fields as columns)."""

    def execute(self, tup: Tuple) -> None:
        """A tick tuple (``topology.tick.tuple.freq.secs``); input rows go to execute_batch."""


def is_columnar(obj: object) -> bool:
    """Whether ``obj`` is an Arrow component (it emits record batches)."""
    return isinstance(obj, ArrowSpout | ArrowBolt)
