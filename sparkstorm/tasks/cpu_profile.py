"""A CPU profile of a worker for a few seconds: Storm's profiler, for a Python worker.

cProfile over the thread that starts it, which in a continuous worker (and in the
driver's loop) is the thread that runs every spout and bolt call of that process.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time

LINES = 60
"""How many functions the profile lists, by cumulative time."""


class CpuProfile:
    """Profiles the calling thread from now until :meth:`done` finds its time is up."""

    def __init__(self, secs: float) -> None:
        self.secs = secs
        self.until = time.monotonic() + secs
        self.profile = cProfile.Profile()
        self.profile.enable()

    def done(self) -> str | None:
        """The profile as text once ``secs`` have passed (and profiling stopped), else None."""
        if time.monotonic() < self.until:
            return None
        self.profile.disable()
        out = io.StringIO()
        stats = pstats.Stats(self.profile, stream=out)
        out.write(f"CPU profile of {self.secs:g} s, by cumulative time (cProfile)\n")
        stats.sort_stats("cumulative").print_stats(LINES)
        return out.getvalue()
