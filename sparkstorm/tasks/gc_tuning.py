"""Fewer garbage collections while a superstep allocates its tuples.

A superstep creates and keeps alive many small objects (a ``Tuple`` per tuple, its
values, its roots). With Python's default young-generation threshold (700) the
collector runs every few hundred of them and re-scans the survivors, which measured
three to six times the cost of decoding the tuples themselves. Tuples form no cycles,
so collecting less often frees nothing later; it only saves the scans. The threshold
is raised for the duration of a superstep and put back afterwards, so the process's own
settings hold everywhere else (``sparkstorm.gc.gen0.threshold``; None leaves them).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def fewer_collections(gen0: int | None) -> Iterator[None]:
    """Within the block, run a young collection every ``gen0`` allocations at most."""
    before = gc.get_threshold()
    if gen0 is None or not gc.isenabled() or before[0] >= gen0 or before[0] == 0:
        yield
        return
    gc.set_threshold(gen0, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
