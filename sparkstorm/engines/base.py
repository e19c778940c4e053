"""The seam between the driver's superstep loop and an engine that runs bolt tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from sparkstorm.engines.wire import StepResult
from sparkstorm.reliability.base_collector import ReportedError
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.tuple import Row


class SparkFacts(Protocol):
    """Where a run's Spark is, for the terminal, the REST API and the page."""

    @property
    def master(self) -> str | None:
        """The Spark master it runs on (``local[*]``, ``spark://...``); None without Spark."""

    @property
    def ui_url(self) -> str | None:
        """The Spark UI's address, when one runs."""

    @property
    def log_file(self) -> Path | None:
        """Where Spark's own log goes, when sparkstorm started Spark's JVM."""


class Engine(SparkFacts, Protocol):
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

    def workers_seen(self) -> list[dict[str, Any]]:
        """The processes that ran supersteps (the API's workers table); none in the driver."""

    def logs_seen(self) -> dict[int, list[tuple[float, str]]]:
        """Each process of :meth:`workers_seen`: its latest log records (when, line)."""

    def set_log_levels(self, levels: dict[str, str]) -> None:
        """Storm UI's "Change log level": the loggers set now (the rest go back)."""

    def set_debug(self, shares: dict[str, float]) -> None:
        """Storm UI's Debug: note this share of each component's calls (0: none, 1: all)."""

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

    def call_under_way(self) -> tuple[str, Any] | None:
        """A bolt call running in the driver's process now and a progress marker, or None.

        The driver's watchdog samples it; an engine whose tasks run elsewhere returns
        None and reports blocked calls through :attr:`blocked`.
        """

    @property
    def blocked(self) -> str | None:
        """A call the engine saw block out of the driver's sight (in an executor), or None."""

    def interrupt(self) -> None:
        """Stop the superstep that a blocked call holds, so that a stop goes on without it."""

    def stop(self) -> list[ReportedError]:
        """Call ``cleanup`` where task instances live; drop the rows in flight."""
