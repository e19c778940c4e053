"""64-bit tuple ids (Storm's ``MessageId.generateId``), reproducible from a seed.

Storm draws ids from a thread-local RNG. Here every task gets a generator seeded by
(topology seed, superstep, task), so a Spark task that is retried on the same input
produces the same root and edge ids; no process-global RNG is ever used.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from functools import partial


def id_source(seed: int, superstep: int, task_id: int) -> Callable[[], int]:
    """Return a function producing this task's ids for this superstep, 64 random bits each.

    The same (seed, superstep, task_id) always yields the same sequence, in any process.
    0 is a possible id and nothing checks uniqueness, as in Storm.

    Examples
    --------
    >>> a, b = id_source(7, 3, 2), id_source(7, 3, 2)
    >>> [a(), a()] == [b(), b()]
    True
    """
    # Mersenne Twister's seeding maps some structured keys to one state (for example
    # the words [2] and [2, 1]), so the key is mixed through BLAKE2b first.
    key = b"%d:%d:%d" % (seed, superstep, task_id)
    mixed = int.from_bytes(hashlib.blake2b(key, digest_size=32).digest(), "little")
    return partial(random.Random(mixed).getrandbits, 64)
