"""An Arrow spout's pending map: a record batch's tracked rows held as one entry.

A spout task's pending map is Storm's ``RotatingMap`` of root id -> (msg id, emit time,
stream): a dict entry and a tuple a message. An Arrow spout emits thousands of messages
at once, so their rows get consecutive root ids, ``base`` to ``base + n - 1`` (``base``
drawn as any id is), and here one batch is one entry: its msg ids, the emit time and
stream they share, and which rows are still pending. The acks of many roots find their
batches in one search over the sorted bases. A row acted on alone (a fail, a reset of
its timeout, a hook's ack) leaves its batch; a reset puts it back as an ordinary entry.
Expiry is the RotatingMap's: a batch lives in the bucket of its emit and expires with it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np

from sparkstorm._types import MsgId
from sparkstorm.reliability.rotating_map import RotatingMap

Entry = tuple[MsgId, float, str]
"""A pending message: its msg id, emit time and stream."""


@dataclass(slots=True)
class PendingBatch:
    """The tracked rows of one ``emit_batch``: roots ``base`` .. ``base + len(msg_ids) - 1``."""

    base: int
    msg_ids: list[MsgId]
    emitted: float
    stream: str
    live: Any
    """A bool a row: still pending."""
    left: int
    """How many rows are still pending."""

    def entry(self, row: int) -> Entry:
        """Row ``row`` as an ordinary pending entry."""
        return self.msg_ids[row], self.emitted, self.stream


@dataclass(slots=True)
class Acked:
    """What :meth:`PendingBatches.remove_acked` took out of the batches."""

    msg_ids: list[MsgId]
    emitted: Any
    """Each one's emit time (float array)."""
    streams: dict[str, int]
    """How many of them each stream holds."""
    elsewhere: list[int]
    """The roots no batch held pending: ordinary entries, or outcomes that come too late."""


class PendingBatches(RotatingMap[int, Entry]):
    """A RotatingMap of root -> (msg id, emit time, stream) that also holds whole batches."""

    def __init__(self, num_buckets: int, expired: Callable[[int, Entry], None] | None = None):
        super().__init__(num_buckets, expired)
        self._batches: deque[dict[int, PendingBatch]] = deque({} for _ in range(num_buckets))
        self._rows = 0
        self._index: tuple[list[int], Any, Any, list[PendingBatch]] | None = None

    def put_batch(self, base: int, msg_ids: list[MsgId], emitted: float, stream: str) -> None:
        """Hold a batch's tracked rows, roots ``base`` onwards, in the newest bucket."""
        n = len(msg_ids)
        live = np.ones(n, bool)
        self._batches[0][base] = PendingBatch(base, msg_ids, emitted, stream, live, n)
        self._rows += n
        self._index = None

    def remove_acked(self, roots: Any) -> Acked:
        """Take the rows of ``roots`` (a uint64 array) out of their batches, at once."""
        if not self._rows:
            return Acked([], np.zeros(0), {}, roots.tolist())
        _, base_array, sizes, batches = self._sorted()
        where = np.searchsorted(base_array, roots, "right") - 1
        at = np.maximum(where, 0)
        rows = roots - base_array[at]  # uint64: a root below every base wraps to huge
        held = (where >= 0) & (rows < sizes[at])
        ids: list[MsgId] = []
        times: list[Any] = []
        streams: dict[str, int] = {}
        missed = ~held
        if held.any():
            picked = np.flatnonzero(held)
            order = picked[np.argsort(where[picked], kind="stable")]
            of = where[order]
            cuts = np.flatnonzero(np.r_[True, of[1:] != of[:-1]])
            for start, end in zip(cuts.tolist(), [*cuts[1:].tolist(), len(order)], strict=True):
                batch = batches[int(of[start])]
                mine = order[start:end]
                taken = rows[mine].astype(np.int64)
                live = batch.live[taken]
                if not live.all():  # taken alone or acked already: look among the entries
                    missed[mine[~live]] = True
                    taken = taken[live]
                taken = np.unique(taken)  # a root named twice is acked once
                if not len(taken):
                    continue
                batch.live[taken] = False
                self._left(batch, len(taken))
                ids += map(batch.msg_ids.__getitem__, taken.tolist())
                times.append(np.full(len(taken), batch.emitted))
                streams[batch.stream] = streams.get(batch.stream, 0) + len(taken)
        emitted = np.concatenate(times) if times else np.zeros(0)
        return Acked(ids, emitted, streams, roots[missed].tolist())

    def _left(self, batch: PendingBatch, taken: int) -> None:
        batch.left -= taken
        self._rows -= taken
        if not batch.left:
            for bucket in self._batches:
                if bucket.get(batch.base) is batch:
                    del bucket[batch.base]
                    break
            self._index = None

    def _sorted(self) -> tuple[list[int], Any, Any, list[PendingBatch]]:
        """The batches by base: as ints, as an array, their sizes, and the batches."""
        if self._index is None:
            found = [b for bucket in self._batches for b in bucket.values()]
            found.sort(key=attrgetter("base"))
            bases = [b.base for b in found]
            sizes = np.array([len(b.msg_ids) for b in found], np.uint64)
            self._index = (bases, np.array(bases, np.uint64), sizes, found)
        return self._index

    def _find(self, root: int) -> tuple[PendingBatch, int] | None:
        """The batch holding ``root``'s row pending, and the row; None if none does."""
        if not self._rows:
            return None
        bases, _, _, batches = self._sorted()
        i = bisect_right(bases, root) - 1
        if i < 0:
            return None
        batch = batches[i]
        row = root - batch.base
        if row >= len(batch.msg_ids) or not batch.live[row]:
            return None
        return batch, row

    def _take(self, root: int) -> Entry | None:
        """Take ``root``'s row out of its batch, if a batch holds it pending."""
        found = self._find(root)
        if found is None:
            return None
        batch, row = found
        batch.live[row] = False
        self._left(batch, 1)
        return batch.entry(row)

    def rotate(self) -> dict[int, Entry]:
        """Drop the oldest bucket, its batches' pending rows too; each expires."""
        dying = self._batches.pop()
        self._batches.appendleft({})
        if dying:
            self._rows -= sum(batch.left for batch in dying.values())
            self._index = None
        dead = super().rotate()
        for batch in dying.values():
            for row in np.flatnonzero(batch.live).tolist():
                root, entry = batch.base + row, batch.entry(row)
                dead[root] = entry
                if self._expired is not None:
                    self._expired(root, entry)
        return dead

    def get(self, key: int) -> Entry | None:
        """The entry of ``key``, or None; does not refresh its expiry."""
        entry = super().get(key)
        if entry is None:
            found = self._find(key)
            if found is not None:
                return found[0].entry(found[1])
        return entry

    def put(self, key: int, value: Entry) -> None:
        """Set ``key`` in the newest bucket, out of its batch (refreshes its expiry)."""
        self._take(key)
        super().put(key, value)

    def remove(self, key: int) -> Entry | None:
        """Remove ``key`` (an entry, or a row of a batch); its entry, or None."""
        entry = super().remove(key)
        return self._take(key) if entry is None else entry

    def remove_many(self, keys: list[int]) -> list[Entry | None]:
        """Remove each of ``keys``; their entries in that order (None where absent)."""
        out = super().remove_many(keys)
        if self._rows:
            for i, entry in enumerate(out):
                if entry is None:
                    out[i] = self._take(keys[i])
        return out

    def contains_key(self, key: int) -> bool:
        """Whether ``key`` is pending, as an entry or a row of a batch."""
        return self.get(key) is not None

    def items(self) -> list[tuple[int, Entry]]:
        """Every entry and pending row, oldest bucket first (a copy)."""
        out = super().items()
        for bucket in reversed(self._batches):
            for batch in bucket.values():
                rows = np.flatnonzero(batch.live).tolist()
                out += [(batch.base + row, batch.entry(row)) for row in rows]
        return out

    def size(self) -> int:
        """How many messages are pending."""
        return super().size() + self._rows

    __len__ = size
    __contains__ = contains_key
