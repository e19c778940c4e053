"""64-bit tuple ids (Storm's ``MessageId.generateId``), reproducible from a seed.

Storm draws ids from a thread-local RNG. Here every task gets a generator seeded by
(topology seed, superstep, task, hop), so a Spark task that is retried on the same input
produces the same root and edge ids; no process-global RNG is ever used.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np


def id_source(seed: int, superstep: int, task_id: int, hop: int = 0) -> Callable[[], int]:
    """Return a function producing this task's ids for this superstep, 64 random bits each.

    The same (seed, superstep, task_id, hop) always yields the same sequence, in any
    process. ``hop`` tells apart the runs of a task within one superstep (Spark delivers
    tuples between tasks in one partition at once). 0 is a possible id and nothing checks
    uniqueness, as in Storm.

    Examples
    --------
    >>> a, b = id_source(7, 3, 2), id_source(7, 3, 2)
    >>> [a(), a()] == [b(), b()]
    True
    """
    # Mersenne Twister's seeding maps some structured keys to one state (for example
    # the words [2] and [2, 1]), so the key is mixed through BLAKE2b first.
    key = b"%d:%d:%d" % (seed, superstep, task_id) + (b":%d" % hop if hop else b"")
    mixed = int.from_bytes(hashlib.blake2b(key, digest_size=32).digest(), "little")
    return partial(random.Random(mixed).getrandbits, 64)


IDS_PER_DRAW = 1 << 24
"""Ids drawn per ``getrandbits`` call: the same bits as one call, in pieces it can take."""


def ids_of(next_id: Callable[[], int], n: int) -> Any:
    """``n`` ids of ``next_id``'s sequence at once, as a uint64 array.

    An id source made by :func:`id_source` draws them in one call (the same bits, 64 at
    a time, so a retried task draws the same ids); any other is called ``n`` times.
    """
    if n <= 0:
        return np.zeros(0, np.uint64)
    if isinstance(next_id, partial) and next_id.func.__name__ == "getrandbits":
        draw = next_id.func.__self__.getrandbits  # type: ignore[attr-defined]
        parts = []
        for start in range(0, n, IDS_PER_DRAW):  # its bit count is a C int
            count = min(IDS_PER_DRAW, n - start)
            bits = draw(64 * count).to_bytes(8 * count, "little")
            parts.append(np.frombuffer(bits, np.uint64))
        return parts[0].copy() if len(parts) == 1 else np.concatenate(parts)
    return np.fromiter((next_id() for _ in range(n)), np.uint64, n)


def consecutive_base(drawn: int, n: int) -> int:
    """The first of ``n`` consecutive root ids, from a ``drawn`` id: none wraps past 2**64.

    A record batch's tracked rows get roots ``base`` .. ``base + n - 1``, so that a spout
    holds them as one pending entry. Ranges of two batches overlap about as often as two
    random ids collide times the batch size (4,096 rows: below 1 in 10**15 a pair).
    """
    return drawn - n if drawn > (1 << 64) - n else drawn
