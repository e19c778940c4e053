"""``RotatingMap``: a map whose entries expire after a number of rotations (Storm's class).

Entries live in buckets, newest first. ``put`` moves a key to the newest bucket;
``rotate`` drops the oldest bucket and hands its entries to the expire callback. An
entry therefore expires between ``num_buckets - 1`` and ``num_buckets`` rotations after
its last ``put``. Not thread-safe; each owner rotates it from its own thread.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from itertools import repeat
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class RotatingMap(Generic[K, V]):
    """Storm's ``RotatingMap``: O(1) get/put/remove, expiry by rotation.

    .. versionadded:: 0.1.0
    """

    def __init__(self, num_buckets: int, expired: Callable[[K, V], None] | None = None) -> None:
        if num_buckets < 2:
            msg = f"RotatingMap needs at least 2 buckets, got {num_buckets}"
            raise ValueError(msg)
        self._buckets: deque[dict[K, V]] = deque({} for _ in range(num_buckets))
        self._expired = expired

    def rotate(self) -> dict[K, V]:
        """Drop the oldest bucket, call the expire callback per entry, return the entries."""
        dead = self._buckets.pop()
        self._buckets.appendleft({})
        if self._expired is not None:
            for key, value in dead.items():
                self._expired(key, value)
        return dead

    def contains_key(self, key: K) -> bool:
        """Whether ``key`` is in any bucket."""
        return any(key in bucket for bucket in self._buckets)

    def get(self, key: K) -> V | None:
        """The value of ``key``, or None; does not refresh its expiry."""
        for bucket in self._buckets:
            if key in bucket:
                return bucket[key]
        return None

    def put(self, key: K, value: V) -> None:
        """Set ``key`` in the newest bucket, removing it from the others (refreshes expiry)."""
        it = iter(self._buckets)
        next(it)[key] = value
        for bucket in it:
            bucket.pop(key, None)

    def remove_many(self, keys: list[K]) -> list[V | None]:
        """Remove each of ``keys``; their values in that order (None where absent)."""
        buckets = iter(self._buckets)
        newest = next(buckets)
        held = len(newest)
        out: list[V | None] = list(map(newest.pop, keys, repeat(None)))
        if held - len(newest) == len(keys):  # the usual case: the newest bucket held all
            return out
        for bucket in buckets:
            left = [i for i, value in enumerate(out) if value is None]
            if not left:
                break
            popped = map(bucket.pop, [keys[i] for i in left], repeat(None))
            for i, value in zip(left, popped, strict=True):
                out[i] = value
        return out

    def remove(self, key: K) -> V | None:
        """Remove ``key`` and return its value, or None if absent."""
        for bucket in self._buckets:
            if key in bucket:
                return bucket.pop(key)
        return None

    def items(self) -> list[tuple[K, V]]:
        """Every entry, oldest bucket first (a copy: safe to remove while iterating)."""
        return [item for bucket in reversed(self._buckets) for item in bucket.items()]

    def size(self) -> int:
        """How many keys the map holds."""
        return sum(len(bucket) for bucket in self._buckets)

    __len__ = size
    __contains__ = contains_key
