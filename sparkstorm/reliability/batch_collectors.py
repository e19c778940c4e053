"""Collectors of Arrow components: emit, anchor, ack and fail a record batch's rows at once.

Every row a spout emits with a message id is one message, and the arithmetic is the
tuple path's (``collectors.py``, ``spout_collector.py``), over arrays: a tracked row gets
a root id and, per target task, an edge id; an output row anchored to input row ``p``
gets an edge id per target, XORed into ``p``'s ack value and joined to each of ``p``'s
trees; acking rows sends ``edge ^ ack_val`` per (row, tree) to the ackers, combined per
root as every ack is. No Python call is made per row, except the spout's own ``ack`` and
``fail`` of each message, and the row-by-row groupings (partial key, custom).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from sparkstorm._types import FailReason, MsgId
from sparkstorm.errors import InvalidTopologyError
from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.reliability.ids import consecutive_base, ids_of
from sparkstorm.reliability.spout_collector import SpoutOutputCollector
from sparkstorm.topology.column_routes import batch_targets
from sparkstorm.topology.declarers import DEFAULT_STREAM_ID
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.groupings import StreamRoute
from sparkstorm.topology.row_batch import U64, Links, RowBatch
from sparkstorm.topology.streams import ACKER_FAIL_STREAM_ID, FAIL_FIELDS

Anchors = Any
"""An integer array (the input row of each output row), a list of them, or None."""


def checked_route(
    routes: dict[str, StreamRoute], component: str, stream: str, batch: Any, direct: bool = False
) -> StreamRoute:
    """The route of ``stream``, the batch's columns checked against its declared fields."""
    if not isinstance(batch, pa.RecordBatch):
        msg = (
            f"component {component!r} emitted a {type(batch).__name__} on stream "
            f"{stream!r}; emit_batch takes a pyarrow.RecordBatch"
        )
        raise InvalidTopologyError(msg, component=component, stream=stream)
    route = routes.get(stream)
    if route is None:
        msg = (
            f"component {component!r} emitted on stream {stream!r}, which it does not "
            f"declare (it declares {sorted(routes)}); declare it in declare_output_fields"
        )
        raise InvalidTopologyError(msg, component=component, stream=stream)
    if route.direct != direct:
        how = "emit_batch_direct" if route.direct else "emit_batch"
        msg = (
            f"component {component!r} emitted on stream {stream!r}, declared "
            f"{'direct' if route.direct else 'not direct'}: use {how}"
        )
        raise InvalidTopologyError(msg, component=component, stream=stream)
    names = batch.schema.names
    if names != route.fields.to_list():
        msg = (
            f"component {component!r} emitted a batch of columns {names} on stream "
            f"{stream!r}, declared with fields {route.fields.to_list()}: give the batch "
            f"those columns, in that order"
        )
        raise InvalidTopologyError(msg, component=component, stream=stream)
    return route


class BatchSpoutOutputCollector(SpoutOutputCollector):
    """An :class:`~sparkstorm.arrow.ArrowSpout`'s collector: ``emit_batch`` besides ``emit``.

    .. versionadded:: 0.4.0
    """

    def emit_batch(
        self,
        batch: pa.RecordBatch,
        msg_ids: Sequence[MsgId | None] | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> int:
        """Emit ``batch`` on ``stream``, one message a row with an id; the rows emitted.

        ``msg_ids`` holds one id per row (None: that row is not tracked); without it no
        row is. Each tracked row's ``ack(msg_id)`` or ``fail(msg_id, reason)`` follows
        once its own tree completed, failed or timed out.
        """
        route = checked_route(self._routes, self._component_id, stream, batch)
        return self._emit_rows(route, None, batch, msg_ids)

    def emit_batch_direct(
        self,
        task: int,
        batch: pa.RecordBatch,
        msg_ids: Sequence[MsgId | None] | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> int:
        """Emit every row of ``batch`` to ``task``, which subscribes to direct ``stream``."""
        route = checked_route(self._routes, self._component_id, stream, batch, direct=True)
        return self._emit_rows(route, self._direct_target(route, task)[0], batch, msg_ids)

    def _emit_rows(
        self,
        route: StreamRoute,
        direct: int | None,
        batch: pa.RecordBatch,
        msg_ids: Sequence[MsgId | None] | None,
    ) -> int:
        stream = route.stream_id
        n = int(batch.num_rows)
        if msg_ids is not None and len(msg_ids) != n:
            msg = (
                f"spout {self._component_id!r} emitted {n} rows on stream {stream!r} with "
                f"{len(msg_ids)} msg_ids: give one per row (None for an untracked row)"
            )
            raise InvalidTopologyError(msg, component=self._component_id, stream=stream)
        if msg_ids is not None and self._skipping:
            keep = [m is None or not self._tracker.committed_already(m) for m in msg_ids]
            if not all(keep):
                batch = batch.filter(pa.array(keep))
                msg_ids = [m for m, k in zip(msg_ids, keep, strict=True) if k]
                n = int(batch.num_rows)
        shares = (
            batch_targets(route, batch, self._counter, self.batches)
            if direct is None
            else [(direct, None)]
        )
        self._counter += n
        self.emitted += n
        self.batches += 1
        route.emitted += n
        fields, component, task = route.fields, self._component_id, self._task_id
        if msg_ids is None or not self._n_ackers:
            for target, rows in shares:
                part = batch if rows is None else batch.take(rows)
                self._out.append((target, RowBatch(part, fields, component, stream, task)))
                self._sent(route, part.num_rows)
            for msg_id in msg_ids or ():
                if msg_id is not None:
                    self._tracker.ack_untracked(msg_id)
            return n
        # None: every row a message, the usual case
        tracked = (
            None if None not in msg_ids else np.fromiter((m is not None for m in msg_ids), bool, n)
        )
        count = n if tracked is None else int(tracked.sum())
        base = consecutive_base(self._next_id(), count)
        consecutive = np.arange(count, dtype=U64) + np.uint64(base)  # one pending entry
        roots = consecutive if tracked is None else np.zeros(n, U64)
        if tracked is not None:
            roots[tracked] = consecutive
        init = np.zeros(n, U64)
        for target, rows in shares:
            rows = np.arange(n) if rows is None else rows
            local = np.arange(len(rows)) if tracked is None else np.nonzero(tracked[rows])[0]
            edges = ids_of(self._next_id, len(local))
            np.bitwise_xor.at(init, rows[local], edges)  # a custom grouping may repeat a row
            links = Links(local, roots[rows[local]], edges)
            part = batch if len(rows) == n else batch.take(rows)
            self._out.append((target, RowBatch(part, fields, component, stream, task, links)))
            self._sent(route, len(rows))
        ids = list(msg_ids) if tracked is None else [m for m in msg_ids if m is not None]
        if count:
            self._tracker.track_batch(base, ids, stream)
            self._init_arrays.append((consecutive, init if tracked is None else init[tracked]))
        return n

    def _sent(self, route: StreamRoute, rows: int) -> None:
        self.transferred += rows
        route.transferred += rows


class BatchOutputCollector(OutputCollector):
    """An :class:`~sparkstorm.arrow.ArrowBolt`'s collector: rows emitted, acked, failed.

    ``anchors`` and the rows acked or failed refer to the batch being executed, or to an
    earlier input batch given as ``of`` (a bolt may hold a batch and settle it later).

    .. versionadded:: 0.4.0
    """

    def __init__(self, plan: Any, task_id: int) -> None:
        super().__init__(plan, task_id)
        self.current: RowBatch | None = None
        """The input batch ``execute_batch`` runs on (set by the task runner)."""
        self.held: dict[int, RowBatch] = {}
        """Input batches not yet settled, by ``id`` of their record batch."""

    def input_of(self, batch: pa.RecordBatch | None) -> RowBatch:
        """The input :class:`RowBatch` of ``batch`` (the current one without ``batch``)."""
        current = self.current
        if batch is None or (current is not None and batch is current.batch):
            if current is None:
                msg = f"bolt {self._component_id!r} settled rows outside execute_batch"
                raise InvalidTopologyError(msg, component=self._component_id)
            return current
        found = self.held.get(id(batch))
        if found is None or found.batch is not batch:
            msg = (
                f"bolt {self._component_id!r} settled rows of a batch it is not holding: "
                f"give the record batch execute_batch received"
            )
            raise InvalidTopologyError(msg, component=self._component_id)
        return found

    def emit_batch(
        self,
        batch: pa.RecordBatch,
        anchors: Anchors = None,
        stream: str = DEFAULT_STREAM_ID,
        of: pa.RecordBatch | None = None,
    ) -> int:
        """Emit ``batch`` on ``stream``; output row i anchored to input row ``anchors[i]``.

        ``anchors`` is an integer array (one input row per output row), a list of such
        arrays (several anchors a row), or None (unanchored). The input is the batch
        being executed, or ``of``. Returns the rows emitted.
        """
        route = checked_route(self._routes, self._component_id, stream, batch)
        return self._emit_rows(route, None, batch, anchors, of)

    def emit_batch_direct(
        self,
        task: int,
        batch: pa.RecordBatch,
        anchors: Anchors = None,
        stream: str = DEFAULT_STREAM_ID,
        of: pa.RecordBatch | None = None,
    ) -> int:
        """Emit every row of ``batch`` to ``task``, which subscribes to direct ``stream``."""
        route = checked_route(self._routes, self._component_id, stream, batch, direct=True)
        return self._emit_rows(route, self._direct_target(route, task)[0], batch, anchors, of)

    def _emit_rows(
        self,
        route: StreamRoute,
        direct: int | None,
        batch: pa.RecordBatch,
        anchors: Anchors,
        of: pa.RecordBatch | None,
    ) -> int:
        stream = route.stream_id
        n = int(batch.num_rows)
        parents = anchor_arrays(anchors, n, self._component_id, stream)
        source = self.input_of(of) if parents else None
        if source is None:
            return self.send_rows(route, direct, batch, None)
        check_anchor_rows(parents, source.num_rows, self._component_id, stream)
        return self.send_rows(
            route, direct, batch, lambda rows: self._anchor(source, parents, rows)
        )

    def send_rows(
        self,
        route: StreamRoute,
        direct: int | None,
        batch: pa.RecordBatch,
        linker: Callable[[Any], Links] | None,
    ) -> int:
        """Send ``batch`` (checked) to its targets, anchored by ``linker``.

        ``linker`` gives the links of the output rows one target gets (an int array of
        them); None: unanchored.
        """
        stream = route.stream_id
        n = int(batch.num_rows)
        shares = (
            batch_targets(route, batch, self._counter, self.batches)
            if direct is None
            else [(direct, None)]
        )
        self._counter += n
        self.emitted += n
        self.batches += 1
        route.emitted += n
        fields, component, task = route.fields, self._component_id, self._task_id
        for target, rows in shares:
            part = batch if rows is None else batch.take(rows)
            links = None
            if linker is not None and self._n_ackers:
                links = linker(np.arange(n) if rows is None else rows)
            self._out.append((target, RowBatch(part, fields, component, stream, task, links)))
            self.transferred += part.num_rows
            route.transferred += part.num_rows
        if self._captured is not None:
            self._captured.extend(
                (component, stream, list(row.values())) for row in batch.to_pylist()
            )
        return n

    def _anchor(self, source: RowBatch, parents: list[Any], rows: Any) -> Links:
        """The links of output ``rows`` sent to one task: an edge each, per anchor."""
        parts: list[Links] = []
        ack_vals = source.row_ack_vals()
        firsts, counts, order = _by_row(source.links, source.num_rows)
        for anchor in parents:
            of_rows = anchor[rows]
            anchored = of_rows >= 0
            local, parent = np.nonzero(anchored)[0], of_rows[anchored]
            edges = ids_of(self._next_id, len(local))
            np.bitwise_xor.at(ack_vals, parent, edges)
            count = counts[parent]
            total = int(count.sum())
            if not total:
                continue
            starts = np.repeat(firsts[parent], count)
            within = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
            picked = order[starts + within]
            parts.append(
                Links(np.repeat(local, count), source.links.roots[picked], np.repeat(edges, count))
            )
        if not parts:
            return Links.empty()
        if len(parts) == 1:
            return parts[0]
        return combined_links(parts)

    def ack_batch(self, batch: pa.RecordBatch | None = None) -> None:
        """Ack every row of ``batch`` (the one being executed by default).

        Each row is settled once: after ``ack_rows`` or ``fail_rows`` on some of its rows,
        ack the others with ``ack_rows(mask)``; a batch acked twice is an error.
        """
        source = self.input_of(batch)
        self._ack(source, self._rows(source, np.ones(source.num_rows, bool), "ack", "batch"))

    def ack_rows(self, mask: Any, batch: pa.RecordBatch | None = None) -> None:
        """Ack the rows where ``mask`` (a bool a row, no nulls) is true."""
        source = self.input_of(batch)
        self._ack(source, self._rows(source, mask, "ack"))

    def fail_rows(
        self, mask: Any, reason: str | None = None, batch: pa.RecordBatch | None = None
    ) -> None:
        """Fail the rows where ``mask`` is true: each one's message alone, with ``reason``."""
        source = self.input_of(batch)
        rows = self._rows(source, mask, "fail")
        why = FailReason("explicit", self._component_id, self._task_id, reason)
        self._fail(source, rows, why)

    def fail_rows_with(self, source: RowBatch, rows: Any, reason: FailReason) -> None:
        """Fail ``source``'s ``rows`` (a bool a row, each unsettled) with ``reason``."""
        self._fail(source, rows, reason)

    def fail_unsettled(self, source: RowBatch, reason: FailReason) -> None:
        """Fail every row of ``source`` not settled yet (``execute_batch`` raised)."""
        self._fail(source, source.unsettled(), reason)

    def reset_timeout_rows(self, mask: Any, batch: pa.RecordBatch | None = None) -> None:
        """Restart the timeout of the trees of the rows where ``mask`` is true."""
        source = self.input_of(batch)
        rows = self._mask(source, mask, "reset_timeout_rows")
        self.flush_acks()
        for root in np.unique(source.links.of(rows).roots).tolist():
            self.reset_root(root)

    def _mask(self, source: RowBatch, mask: Any, call: str) -> Any:
        """``mask`` as a numpy bool array of a row each; nulls and other shapes refused."""
        nulls = getattr(mask, "null_count", None)
        if nulls is None and (not isinstance(mask, np.ndarray) or mask.dtype == object):
            nulls = sum(value is None for value in mask)
        if nulls:
            msg = (
                f"bolt {self._component_id!r} gave {call} a mask with {nulls} null(s): a "
                f"null row would be neither settled nor said; fill them first "
                f"(pyarrow.compute.fill_null(mask, False))"
            )
            raise InvalidTopologyError(msg, component=self._component_id)
        if hasattr(mask, "to_numpy"):
            mask = mask.to_numpy(zero_copy_only=False)
        rows = np.asarray(mask, bool)
        if rows.shape != (source.num_rows,):
            msg = (
                f"bolt {self._component_id!r} gave {call} a mask of shape {rows.shape} "
                f"for a batch of {source.num_rows} rows: give one bool a row"
            )
            raise InvalidTopologyError(msg, component=self._component_id)
        return rows

    def _rows(self, source: RowBatch, mask: Any, what: str, call: str = "rows") -> Any:
        """The rows ``mask`` settles: each must be unsettled so far."""
        rows = self._mask(source, mask, f"{what}_{call}")
        again = rows & ~source.unsettled()
        if again.any():
            first = np.nonzero(again)[0][:10].tolist()
            how = (
                "ack the rows left with ack_rows(mask)"
                if call == "batch" and not again.all()
                else "settle each row once"
            )
            msg = (
                f"bolt {self._component_id!r} {what}_{call}: rows {first} of the batch were "
                f"acked or failed already: {how}"
            )
            raise InvalidTopologyError(msg, component=self._component_id)
        return rows

    def _settle(self, source: RowBatch, rows: Any) -> int:
        source.unsettled()
        source.settled |= rows
        if source.settled.all():
            self.held.pop(id(source.batch), None)
        elif source is self.current:
            self.held[id(source.batch)] = source
        return int(rows.sum())

    def _ack(self, source: RowBatch, rows: Any) -> None:
        acked = self._settle(source, rows)
        self.acked += acked
        if source.received_at:
            self.process_secs += (time.time() - source.received_at) * acked
        links = source.links.of(rows)
        if len(links):
            values = links.edges ^ source.row_ack_vals()[links.rows]
            self.ack_arrays(links.roots, values)

    def _fail(self, source: RowBatch, rows: Any, reason: FailReason) -> None:
        self.failed += self._settle(source, rows)
        self.flush_acks()
        for root in np.unique(source.links.of(rows).roots).tolist():
            self._to_acker(root, ACKER_FAIL_STREAM_ID, FAIL_FIELDS, [root, reason])


def anchor_arrays(anchors: Anchors, n: int, component: str, stream: str) -> list[Any]:
    """``anchors`` as a list of int arrays of ``n`` entries (-1: no anchor there)."""
    if anchors is None:
        return []
    arrays = anchors if isinstance(anchors, list) else [anchors]
    out = []
    for anchor in arrays:
        values = np.asarray(
            anchor.to_numpy(zero_copy_only=False) if hasattr(anchor, "to_numpy") else anchor,
            np.int64,
        )
        if values.shape != (n,):
            msg = (
                f"component {component!r} emitted {n} rows on stream {stream!r} with "
                f"{values.shape[0] if values.ndim else 0} anchors: give one input row a row"
            )
            raise InvalidTopologyError(msg, component=component, stream=stream)
        out.append(values)
    return out


def check_anchor_rows(parents: list[Any], rows: int, component: str, stream: str) -> None:
    """Every anchor names a row of the input batch (or is -1: no anchor)."""
    for values in parents:
        wrong = (values < -1) | (values >= rows)
        if wrong.any():
            at = int(np.nonzero(wrong)[0][0])
            msg = (
                f"component {component!r} emitted on stream {stream!r} a row {at} anchored "
                f"to input row {int(values[at])}, but the input batch has {rows} rows: give "
                f"an index in 0..{rows - 1} (or -1 for no anchor)"
            )
            raise InvalidTopologyError(msg, component=component, stream=stream)


def _by_row(links: Links, rows: int) -> tuple[Any, Any, Any]:
    """For each row, where its links start in ``order`` and how many it has."""
    order = np.argsort(links.rows, kind="stable")
    counts = np.bincount(links.rows, minlength=rows) if len(links) else np.zeros(rows, np.int64)
    firsts = np.cumsum(counts) - counts
    return firsts, counts, order


def combined_links(parts: list[Links]) -> Links:
    """Links of several anchors, one per (row, root): a root reached twice XORs its edges."""
    rows = np.concatenate([p.rows for p in parts])
    roots = np.concatenate([p.roots for p in parts])
    edges = np.concatenate([p.edges for p in parts])
    order = np.lexsort((roots, rows))
    rows, roots, edges = rows[order], roots[order], edges[order]
    new = np.ones(len(rows), bool)
    new[1:] = (rows[1:] != rows[:-1]) | (roots[1:] != roots[:-1])
    starts = np.nonzero(new)[0]
    return Links(rows[starts], roots[starts], np.bitwise_xor.reduceat(edges, starts))


def batch_fields(batch: pa.RecordBatch) -> Fields:
    """A record batch's column names as :class:`~sparkstorm.Fields`."""
    return Fields(batch.schema.names)
