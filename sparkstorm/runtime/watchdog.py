"""The watchdog: a user call on the driver that has not returned for a while is reported.

Spouts' ``next_tuple``, ``ack`` and ``fail`` run on the driver between supersteps (and,
on the local engine, bolts' ``execute``): one that blocks stalls the whole topology,
as it stalls a Storm executor. A thread samples what the driver is calling and how far
it got; a call that made no progress for ``limit_secs`` is logged once, naming the
component and task, and marked ``blocked`` so that a Ctrl-C can interrupt it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

WATCHDOG_SECS = 5.0

Probe = Callable[[], tuple[str, Any] | None]
"""What the driver is calling now and a progress marker, or None between user calls."""


class Watchdog:
    """Samples ``probe`` every second on a daemon thread while running (a context manager)."""

    def __init__(self, probe: Probe, limit_secs: float = WATCHDOG_SECS) -> None:
        self.probe = probe
        self.limit_secs = limit_secs
        self.blocked: str | None = None
        """The call that has not returned for ``limit_secs``, while it has not."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="sparkstorm-watchdog", daemon=True)

    def __enter__(self) -> Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        last, still = None, 0.0
        period = min(1.0, self.limit_secs / 5)
        while not self._stop.wait(period):
            seen = self.probe()
            if seen is None or seen != last:
                last, still, self.blocked = seen, 0.0, None
                continue
            still += period
            if still >= self.limit_secs and self.blocked is None:
                self.blocked = seen[0]
                message = (
                    f"{seen[0]} has not returned for {self.limit_secs:g} s: it must not block "
                    f"(wait with a short timeout, or hand the work to a thread of your own); "
                    f"the whole topology waits for it"
                )
                log.warning("%s", message)
