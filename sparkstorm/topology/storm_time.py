"""Storm's ``Time``: the time as a component should read it, simulated under test.

In a run, it is the wall clock. Under ``LocalCluster(simulated_time=True)`` it is the
topology's simulated time, which starts at 0 and moves only when the test advances it
(Storm's ``Time.simulating``), in every task of the topology, wherever it runs: a bolt
that keeps its own timeouts then fires them at the simulated second the test chose.
"""

from __future__ import annotations

import time

_simulated_now: float | None = None


class Time:
    """The current time for components (Storm's ``org.apache.storm.utils.Time``).

    .. versionadded:: 0.2.0
    """

    @staticmethod
    def current_time_secs() -> float:
        """Seconds: the wall clock's epoch seconds, or the simulated topology time."""
        return time.time() if _simulated_now is None else _simulated_now

    @staticmethod
    def current_time_millis() -> int:
        """Milliseconds, as :meth:`current_time_secs`."""
        return int(Time.current_time_secs() * 1000)

    @staticmethod
    def is_simulating() -> bool:
        """Whether the time is simulated (a task of a simulated-time test topology)."""
        return _simulated_now is not None


def simulate(now: float | None) -> None:
    """In a task's process: the simulated topology time is now ``now`` (None: none)."""
    global _simulated_now
    _simulated_now = now
