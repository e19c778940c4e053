"""What a run sends back to the driver of its captured components' emits, bounded.

``sparkstorm.capture`` is for tests, examples and small result streams; a stream that
runs for weeks would otherwise grow the driver without end. Each (component, stream)
keeps its latest ``sparkstorm.capture.max.values`` values; what was dropped is counted,
and the run says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

SLACK = 4
"""A list is trimmed once it holds a quarter more than the limit: amortized O(1)."""


class Captures(dict[tuple[str, str], list[list[Any]]]):
    """Captured values by (component, stream): the latest ``limit`` of each."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.dropped: dict[tuple[str, str], int] = {}
        """How many of each (component, stream)'s oldest values were dropped."""

    def add(self, captured: Iterable[tuple[str, str, list[Any]]]) -> None:
        """Keep ``(component, stream, values)`` emits, dropping the oldest past the limit."""
        for component, stream, values in captured:
            kept = self.setdefault((component, stream), [])
            kept.append(values)
            if len(kept) > self.limit + self.limit // SLACK:
                self._trim((component, stream), kept)

    def trimmed(self) -> Captures:
        """The captures, no list over the limit (what a run's result shows)."""
        for key, kept in self.items():
            if len(kept) > self.limit:
                self._trim(key, kept)
        return self

    def _trim(self, key: tuple[str, str], kept: list[list[Any]]) -> None:
        cut = len(kept) - self.limit
        del kept[:cut]
        self.dropped[key] = self.dropped.get(key, 0) + cut
