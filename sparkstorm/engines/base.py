"""The seam between the driver's superstep loop and an engine that runs bolt tasks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from sparkstorm.reliability.collectors import ReportedError, Row
from sparkstorm.tasks.metrics import TaskStats
from sparkstorm.tasks.profile import Profile
from sparkstorm.topology.plan import Plan

Captured = list[tuple[str, str, list[Any]]]
"""(component, stream, values) of every user emit, when the topology is captured."""


@dataclass
class StepResult:
    """What one superstep hands back to the driver."""

    spout_rows: list[Row]
    """The acker's outcomes, addressed to spout tasks."""
    in_flight: int
    """Rows the engine holds for the next superstep."""
    stats: list[TaskStats] = field(default_factory=list)
    errors: list[ReportedError] = field(default_factory=list)
    captured: Captured = field(default_factory=list)
    debug: list[str] = field(default_factory=list)
    """``topology.debug``'s lines from the tasks, in order per task."""
    profile: Profile = field(default_factory=Profile)
    """Seconds this superstep spent per phase (see :mod:`sparkstorm.tasks.profile`)."""
    superstep: int = -1
    """The superstep this result is of (a pipelined engine returns the one before)."""
    lost: bool = False
    """The superstep's job failed (a lost executor): its rows and the bolts' state are gone."""


class Engine(Protocol):
    """Runs the bolt and acker tasks of one topology, one superstep at a time.

    The driver calls ``start`` once, then ``superstep`` repeatedly, then ``stop``. Each
    ``superstep`` delivers every row the engine holds plus ``rows``, runs the receiving
    tasks (and, in hops, what they emit to tasks of the same worker), keeps what leaves
    a worker for the next superstep and returns the rows addressed to spout tasks. An
    engine may pipeline: return the previous superstep's result while this one runs, so
    the driver's spout work overlaps it.
    """

    name: str
    target_superstep_secs: float
    """How long a superstep should take when spouts have plenty to emit (see
    :mod:`sparkstorm.control.batch_sizing`); ``sparkstorm.superstep.target.secs`` overrides."""

    def start(self, plan: Plan, seed: int, capture: frozenset[str]) -> None:
        """Create the tasks; the emits of components in ``capture`` go back to the driver."""

    def superstep(self, rows: list[Row], superstep: int, now: float) -> StepResult:
        """Run one superstep at topology time ``now``.

        A pipelined engine launches it and returns the result of the one before.
        """

    @property
    def busy(self) -> bool:
        """Whether a launched superstep's result has not been returned yet (pipelined)."""

    def collect(self) -> StepResult | None:
        """Wait for the superstep still running and return its result; None if none runs."""

    def discard_in_flight(self) -> None:
        """Drop every tuple in flight (keep the tasks' state); nothing may be running."""

    @property
    def blocked(self) -> str | None:
        """A call the engine saw block out of the driver's sight (in an executor), or None."""

    def interrupt(self) -> None:
        """Stop the superstep that a blocked call holds, so that a stop goes on without it."""

    def stop(self) -> list[ReportedError]:
        """Call ``cleanup`` where task instances live; drop the rows in flight."""
