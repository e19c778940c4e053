"""What engines hand between the places a topology runs: typed records, not bare tuples.

A tuple in flight is a :data:`~sparkstorm.topology.tuple.Row` (target task, tuple: Storm's
``AddressedTuple``). What a superstep hands back to the control plane is a
:class:`StepResult`; what each Spark partition reports beside its rows is a
:class:`PartitionReport`. Engines build and read these; the control plane reads
``StepResult`` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparkstorm.reliability.base_collector import Captured, ReportedError
from sparkstorm.tasks.metrics import TaskStats
from sparkstorm.tasks.process_usage import ProcessUsage
from sparkstorm.tasks.profile import Profile
from sparkstorm.topology.tuple import Row

__all__ = ["Captured", "PartitionReport", "Row", "StepResult"]


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
    retried: list[tuple[int, int]] = field(default_factory=list)
    """(partition, attempt) of each partition Spark ran again within the job."""


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """What one partition's run of a superstep reports to the driver besides its rows.

    Built in the Python worker after the partition's tasks ran, pickled into the
    partition's last Arrow batch, and folded into the superstep's :class:`StepResult` on
    the driver.
    """

    stats: list[TaskStats]
    """The statistics of every task that ran, by task id."""
    errors: list[ReportedError]
    captured: Captured
    debug: list[str]
    in_flight: int
    """Tuples the partition emitted to other partitions, for the next superstep."""
    pid: int
    """The Python worker's process id (a task prepared twice in one pid is a bug)."""
    profile: Profile
    host: str = ""
    """The machine the Python worker runs on."""
    usage: ProcessUsage | None = None
    """The Python worker's process: memory, CPU time, when it started."""
    log_lines: list[str] = field(default_factory=list)
    """The Python worker's log records since its last report."""
    attempt: int = 0
    """Spark's attempt number of the partition's task: above 0, an attempt was lost."""
    partition: int = 0
