"""When to start lost workers again, and when to give up: the restart strategy.

Storm's supervisors restart a dead worker for as long as its topology lives; Flink bounds
restarts by failure rate and spaces them with an exponential delay that resets after a
stable period. A stream that must run for weeks needs both: no cap over the run's life,
yet a crash loop (a bolt whose ``prepare`` kills its worker every time) must end, in one
line, within minutes. So a run gives up when

- more than ``sparkstorm.restart.max.failures`` losses fall within
  ``sparkstorm.restart.failure.interval.secs`` (the failure rate), or
- more than ``sparkstorm.restart.max.failures`` losses come in a row, each before the
  workers had run ``sparkstorm.restart.stable.secs`` (a crash loop, however slow the
  cluster is to start them: Flink's ``attempts-before-reset-backoff``).

The rate alone is not enough: with an exponential delay, a crash loop on a cluster slow
to start workers (10 s and more) spreads its losses below any rate that still lets a
stream that loses a worker every 25 s run on; counted in a row, it ends regardless.

Between a loss and the next start it waits ``sparkstorm.restart.delay.initial.secs``,
doubled for each loss in a row, at most ``sparkstorm.restart.delay.max.secs``. Both
modes use it: the continuous mode for its lost stage, the superstep mode for its lost
supersteps.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparkstorm.config import (
    SPARKSTORM_RESTART_DELAY_INITIAL_SECS,
    SPARKSTORM_RESTART_DELAY_MAX_SECS,
    SPARKSTORM_RESTART_FAILURE_INTERVAL_SECS,
    SPARKSTORM_RESTART_MAX_FAILURES,
    SPARKSTORM_RESTART_STABLE_SECS,
)
from sparkstorm.errors import SparkStormError

KEPT = 100
"""How many restarts the history keeps (the API shows them; the count goes on)."""


@dataclass(frozen=True)
class Restart:
    """One loss and the restart it led to, as the REST API and the page show it."""

    at: float
    """Wall time of the loss (``time.time()``)."""
    reason: str
    """The loss's first line (Spark's, or the worker's)."""
    delay_secs: float
    """How long the restart waited."""
    worker: int | None = None
    host: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The API's form."""
        return {
            "time": round(self.at, 3),
            "worker": self.worker,
            "host": self.host,
            "reason": self.reason,
            "delaySecs": self.delay_secs,
        }


class RestartStrategy:
    """Counts losses; says how long to wait before the next start, or gives up."""

    def __init__(
        self,
        max_failures: int,
        interval_secs: float,
        initial_delay_secs: float,
        max_delay_secs: float,
        stable_secs: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.interval_secs = float(interval_secs)
        self.initial_delay_secs = float(initial_delay_secs)
        self.max_delay_secs = float(max_delay_secs)
        self.stable_secs = float(stable_secs)
        self._clock = clock
        self._recent: deque[float] = deque()
        self._in_a_row = 0
        self._running_since: float | None = clock()
        self.count = 0
        """Losses over the run's life."""
        self.history: deque[Restart] = deque(maxlen=KEPT)

    @classmethod
    def from_conf(cls, conf: dict[str, Any]) -> RestartStrategy:
        """The strategy ``conf``'s ``sparkstorm.restart.*`` keys describe."""
        return cls(
            conf[SPARKSTORM_RESTART_MAX_FAILURES],
            conf[SPARKSTORM_RESTART_FAILURE_INTERVAL_SECS],
            conf[SPARKSTORM_RESTART_DELAY_INITIAL_SECS],
            conf[SPARKSTORM_RESTART_DELAY_MAX_SECS],
            conf[SPARKSTORM_RESTART_STABLE_SECS],
        )

    def lost(
        self, what: str, reason: str, worker: int | None = None, host: str | None = None
    ) -> float:
        """Count one loss of ``what``; return the seconds to wait before starting again.

        Raises :class:`SparkStormError`, one line saying why, when the run must give up.
        """
        now = self._clock()
        ran = None if self._running_since is None else now - self._running_since
        if ran is not None and ran >= self.stable_secs:
            self._in_a_row = 0
        self._running_since = None
        self._in_a_row += 1
        self.count += 1
        self._recent.append(now)
        while self._recent[0] <= now - self.interval_secs:
            self._recent.popleft()
        if self._in_a_row > self.max_failures:
            msg = (
                f"{what} lost {self._in_a_row} times in a row, each within "
                f"{self.stable_secs:g} s of starting: a crash loop; giving up. "
                f"The last loss: {reason}"
            )
            raise SparkStormError(msg)
        if len(self._recent) > self.max_failures:
            msg = (
                f"{what} lost {len(self._recent)} times within {self.interval_secs:g} s, more "
                f"than {SPARKSTORM_RESTART_MAX_FAILURES}={self.max_failures} allows; giving up. "
                f"The last loss: {reason}"
            )
            raise SparkStormError(msg)
        delay = min(self.max_delay_secs, self.initial_delay_secs * 2.0 ** (self._in_a_row - 1))
        self.history.append(Restart(time.time(), reason, delay, worker, host))
        return delay

    def running(self) -> None:
        """The workers run again: the stable period starts now."""
        self._running_since = self._clock()
