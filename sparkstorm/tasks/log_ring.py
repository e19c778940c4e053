"""A worker's Python log records, for the driver: Storm's logviewer, for a Python worker.

A worker in a Spark Python worker logs to that process's stderr, which lands in the
executor's log on whichever machine runs it. The ring keeps the latest records for the
worker's reports, so the page and the API show them, and the driver says again the
warnings among them (:func:`relog`), so a spout's "reconnected to ..." in a worker
reaches the run's output as it does on the local engine.
"""

from __future__ import annotations

import logging
from collections import deque

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
"""A record's line: ``2026-11-27 22:31:30,123 WARNING sparkstorm.x: the message``."""
LIMIT = 500
"""The most records kept between two reports (a burst beyond it keeps the latest)."""


class LogRing(logging.Handler):
    """Keeps the records logged since they were last taken."""

    def __init__(self, limit: int = LIMIT) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter(FORMAT))
        self.lines: deque[str] = deque(maxlen=limit)

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the record, formatted."""
        try:
            self.lines.append(self.format(record))
        except Exception:  # a record that cannot be formatted is logging's to report
            self.handleError(record)

    def take(self) -> list[str]:
        """The records kept since the last call."""
        lines = list(self.lines)
        self.lines.clear()
        return lines


def relog(where: str, lines: list[str]) -> None:
    """Log again, on the driver, a worker's lines at WARNING and above, naming the worker.

    Under the record's own logger and level, so the run's logging settings apply to it
    as to the driver's own records; the lines below WARNING stay in the worker's log
    view only.
    """
    for line in lines:
        parts = line.split(" ", 4)  # date, time, level, "name:", message
        if len(parts) < 5:
            continue
        level = logging.getLevelName(parts[2])
        if isinstance(level, int) and level >= logging.WARNING:
            logging.getLogger(parts[3].rstrip(":")).log(level, "[%s] %s", where, parts[4])
