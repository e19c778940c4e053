"""Clocks: simulated time for tests (moves only when told) and the wall clock."""

from __future__ import annotations

import time


class SimulatedClock:
    """A clock that moves only through :meth:`advance` (Storm's ``Time.simulating``)."""

    def __init__(self) -> None:
        self._now = 0.0

    def now(self) -> float:
        """Seconds since the clock was created, as advanced so far."""
        return self._now

    def advance(self, secs: float) -> None:
        """Move the clock forward by ``secs``."""
        self._now += secs


class WallClock:
    """Monotonic wall-clock seconds since creation."""

    def __init__(self) -> None:
        self._start = time.monotonic()

    def now(self) -> float:
        """Seconds since the clock was created."""
        return time.monotonic() - self._start

    def advance(self, secs: float) -> None:
        """Wait ``secs`` of real time."""
        time.sleep(secs)


Clock = SimulatedClock | WallClock
