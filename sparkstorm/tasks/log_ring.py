"""A worker's Python log records, for the driver: Storm's logviewer, for a Python worker.

A continuous worker in a Spark Python worker logs to that process's stderr, which lands
in the executor's log on whichever machine runs it. The ring also keeps the latest
records for the worker's reports, so the page and the API show them.
"""

from __future__ import annotations

import logging
from collections import deque

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
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
