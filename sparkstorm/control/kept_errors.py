"""The errors a run keeps on the driver, bounded for a stream that runs for weeks.

Tasks' errors are throttled per task (``topology.max.error.report.per.interval``), yet a
task that fails on every distinct input for weeks still reports thousands a day. The run
keeps the first :data:`FIRST` (the cause is often there) and the latest, :data:`LIMIT`
in all, and counts what it let go.
"""

from __future__ import annotations

from sparkstorm.reliability.base_collector import ReportedError

FIRST = 100
"""The first errors of a run are always kept."""
LIMIT = 10_000
"""How many errors a run keeps (trimmed once a quarter more have come: amortized O(1))."""


class KeptErrors(list[ReportedError]):
    """A run's errors: the first and the latest; ``dropped`` counts the occurrences between."""

    def __init__(self, limit: int = LIMIT) -> None:
        super().__init__()
        self.limit = limit
        self.dropped = 0
        """Occurrences (records' counts) of the errors let go."""
        self.trims = 0
        """How many times records were let go (positions held elsewhere moved then)."""
        self.halted: ReportedError | None = None
        """The first error that halts the run (``TopologyHalted``), once one came."""

    def append(self, error: ReportedError) -> None:
        """Keep ``error``; past the limit, let the oldest after the first ones go."""
        super().append(error)
        if error.halts and self.halted is None:
            self.halted = error
        if len(self) > self.limit + self.limit // 4:
            first = min(FIRST, self.limit)
            cut = len(self) - self.limit
            self.dropped += sum(e.count for e in self[first : first + cut])
            del self[first : first + cut]
            self.trims += 1
