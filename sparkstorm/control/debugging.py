"""Storm UI's Debug: a share of components' emits, acks and fails, into an event log.

``topology.debug`` at submission notes every call of every component; an operator can
turn it on, off or to a sampling percentage, for the topology or one component, while
the topology runs. The lines reach the driver with the tasks' reports; it logs them on
``sparkstorm.debug`` and keeps the latest :data:`EVENTS` for the page and the API.
"""

from __future__ import annotations

import time
from collections import deque

from sparkstorm.config import TOPOLOGY_DEBUG
from sparkstorm.reliability.debug import DEBUG_LOG
from sparkstorm.topology.plan import Plan

EVENTS = 1000
"""How many debug lines the driver keeps (all are logged)."""


class Debugging:
    """The debug share of each component, and the latest lines the tasks noted."""

    def __init__(self, plan: Plan) -> None:
        self.shares = {
            c: 1.0 if plan.component_conf(c)[TOPOLOGY_DEBUG] else 0.0 for c in plan.components
        }
        """Component -> the share of its calls noted (0: none, 1: all)."""
        self.changed = False
        """Whether an operator changed a share (until then the tasks keep their own)."""
        self.events: deque[tuple[float, str]] = deque(maxlen=EVENTS)

    def set(self, component: str | None, percent: float) -> dict[str, float]:
        """Sample ``percent`` of ``component``'s calls (None: every component's)."""
        share = min(100.0, max(0.0, percent)) / 100
        for name in self.shares if component is None else [component]:
            self.shares[name] = share
        self.changed = True
        return dict(self.shares)

    def note(self, lines: list[str]) -> None:
        """Log the tasks' lines here, on the driver, as they arrive; keep the latest."""
        now = time.time()
        for line in lines:
            DEBUG_LOG.info("%s", line)
            self.events.append((now, line))
