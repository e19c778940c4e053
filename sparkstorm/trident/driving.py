"""Who runs the topology while a test waits on it (``feed``, a DRPC call).

In a test, ``LocalCluster`` runs its topologies on the test's own thread: it registers
itself here, and a call that waits for a batch to commit runs the cluster until then.
Where the topology runs on a thread of its own (``sparkstorm.run``), the call just waits.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Driver = Callable[[Callable[[], bool], float], None]
"""Runs the topologies until the condition holds, or raises after ``timeout`` seconds."""

_drivers: list[Driver] = []

DEFAULT_TIMEOUT_SECS = 60.0


def register(driver: Driver) -> None:
    """``driver`` runs the topologies that a waiting call needs (the newest one wins)."""
    _drivers.append(driver)


def unregister(driver: Driver) -> None:
    """``driver`` is gone (its cluster shut down)."""
    if driver in _drivers:
        _drivers.remove(driver)


def run_until(condition: Callable[[], bool], timeout: float | None, what: str) -> None:
    """Return once ``condition()`` holds; raise ``TimeoutError`` naming ``what`` if it does not."""
    limit = DEFAULT_TIMEOUT_SECS if timeout is None else timeout
    if _drivers:
        _drivers[-1](condition, limit)
        return
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            msg = f"{what} did not complete within {limit} s"
            raise TimeoutError(msg)
        time.sleep(0.005)
