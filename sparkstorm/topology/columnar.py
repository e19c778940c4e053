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
from collections.abc import Callable
from typing import TYPE_CHECKING

from sparkstorm.topology.components import Bolt, Spout, _StatefulHooks
from sparkstorm.topology.windowing import WindowedBolt

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
        told per message, with its reason. A spout that does not override ``ack`` is not
        called once per row for nothing.
        """
        if type(self).ack is Spout.ack:
            return
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


class StatefulArrowBolt(_StatefulHooks, ArrowBolt):
    """An :class:`ArrowBolt` whose state is checkpointed: Storm's stateful bolt, in columns.

    ``init_state(state)`` hands it its :class:`~sparkstorm.KeyValueState`, committed with
    every stateful task's at each checkpoint, as a :class:`~sparkstorm.StatefulBolt`'s
    is. Read and write it a batch at a time: ``state.get_many(keys, default)`` returns
    a value per key, ``state.put_many(keys, values)`` sets them. A row it acks is acked
    to its spout once a checkpoint holds its effect; a row failed, or a tree that timed
    out, rolls every stateful task back to the last checkpoint and its messages are
    replayed: each row's effect is in the committed state once.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import pyarrow.compute as pc
    >>> class Count(StatefulArrowBolt):
    ...     def prepare(self, conf, context, collector):
    ...         self.collector = collector
    ...     def init_state(self, state):
    ...         self.counts = state
    ...     def execute_batch(self, batch):
    ...         tally = pc.value_counts(batch["word"])  # each word and its rows here
    ...         words, seen = tally.field("values"), tally.field("counts").to_pylist()
    ...         counts = [n + k for n, k in zip(self.counts.get_many(words, 0), seen)]
    ...         self.counts.put_many(words, counts)
    ...         self.collector.ack_batch(batch)

    .. versionadded:: 0.5.0
    """


class ArrowWindow:
    """The rows of one window, as tables, and how it differs from the window before.

    Each part is a ``pyarrow.Table`` of the input's columns, oldest row first, made
    when asked for. A row's position in :meth:`get` is what ``emit_batch``'s
    ``anchors`` name.

    .. versionadded:: 0.5.0
    """

    def __init__(
        self,
        table_of: Callable[[list[int]], pa.Table],
        rows: list[int],
        new: list[int],
        expired: list[int],
        start_timestamp: float | None,
        end_timestamp: float,
    ) -> None:
        self._table_of, self._rows, self._new, self._expired = table_of, rows, new, expired
        self._tables: dict[str, pa.Table] = {}
        self.start_timestamp = start_timestamp
        """The window's start (exclusive), as ``TupleWindow``'s; None for a count window."""
        self.end_timestamp = end_timestamp
        """The window's end (inclusive), as ``TupleWindow``'s."""

    def get(self) -> pa.Table:
        """Every row in the window, oldest first."""
        return self._part("rows", self._rows)

    def get_new(self) -> pa.Table:
        """The rows that arrived since the last window."""
        return self._part("new", self._new)

    def get_expired(self) -> pa.Table:
        """The rows of the last window that are not in this one (already acked)."""
        return self._part("expired", self._expired)

    def _part(self, name: str, rows: list[int]) -> pa.Table:
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = self._table_of(rows)
        return table

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return (
            f"ArrowWindow({len(self._rows)} rows, {len(self._new)} new, "
            f"{len(self._expired)} expired, end {self.end_timestamp!r})"
        )


class WindowedArrowBolt(WindowedBolt):
    """A windowed bolt over columns: each window comes as an :class:`ArrowWindow`.

    Storm's windowing (``with_window``, ``with_tumbling_window``, count or duration,
    event time with ``with_timestamp_field``, ``with_lag`` and a late-row stream), its
    inputs taken as record batches and kept as such. Every input row is acked once it
    has left every window it can be in, as a windowed bolt's tuples are; a window whose
    ``execute`` raises fails its rows. ``collector.emit_batch(batch)`` anchors every
    output row to every row of the window (Storm's windowed emit);
    ``emit_batch(batch, anchors=rows)`` to the rows of ``window.get()`` at those
    positions (-1: none). Its inputs share their columns (a window is one table); late
    rows go, with those columns, on the stream named by ``with_late_tuple_stream``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import pyarrow.compute as pc
    >>> from sparkstorm import Count
    >>> class WindowCount(WindowedArrowBolt):
    ...     def prepare(self, conf, context, collector):
    ...         self.collector = collector
    ...     def execute(self, window):
    ...         tally = pc.value_counts(window.get()["word"].combine_chunks())
    ...         out = pa.record_batch([tally.field("values"), tally.field("counts")],
    ...                               names=["word", "count"])
    ...         self.collector.emit_batch(out)  # anchored to the window's rows
    >>> bolt = WindowCount().with_tumbling_window(Count(1000))

    .. versionadded:: 0.5.0
    """

    @abstractmethod
    def execute(self, window: ArrowWindow) -> None:  # type: ignore[override]
        """Process one window; ``emit_batch`` without anchors anchors to its rows."""


class StatefulWindowedArrowBolt(_StatefulHooks, WindowedArrowBolt):
    """A windowed Arrow bolt whose windows and state are checkpointed.

    Storm's ``BaseStatefulWindowedBolt`` with ``withPersistence``, over columns, as
    :class:`~sparkstorm.StatefulWindowedBolt` is over tuples: ``init_state`` hands it its
    :class:`~sparkstorm.KeyValueState`; the input batches waiting in its windows are
    saved with every checkpoint beside that state; an input row is acked as it arrives
    and completes at the next commit; a failure anywhere rolls the windows back with
    every stateful task, so each message is in one committed window (tumbling) and each
    window's effect on the state counts once. Emits are not anchored (pass no
    ``anchors``); an exception in ``execute`` rolls back. The store's serializer must be
    ``pickle`` (the default).

    .. versionadded:: 0.5.0
    """


def is_columnar(obj: object) -> bool:
    """Whether ``obj`` is an Arrow component (it emits record batches)."""
    return isinstance(obj, ArrowSpout | ArrowBolt | WindowedArrowBolt)


def takes_batches(obj: object) -> bool:
    """Whether ``obj`` is a bolt whose task takes its inputs as record batches."""
    return isinstance(obj, ArrowBolt | WindowedArrowBolt)
