"""Where a run's time goes, by phase: seconds summed over supersteps (always on, cheap).

Timers sit around whole phases of a superstep, never around single tuples, so keeping
them costs a few microseconds a superstep. Driver phases are wall time on the driver;
worker phases are summed over the tasks or partitions that ran them, which on Spark
run in parallel, so ``partition_critical`` (the slowest partition of each superstep)
is what a superstep waited for, and ``spark_job`` minus it is Spark's own share.
"""

from __future__ import annotations

PHASES = {
    "spout": "driver: outcomes to spouts, ticks, next_tuple and tracking",
    "driver_arrow": "driver: rows to envelopes and Arrow, collected rows back (spark)",
    "driver_plan": "driver: building the superstep's DataFrames, py4j calls (spark)",
    "spark_job": "the superstep's Spark job, from launch to its collected result (spark)",
    "job_wait": "driver: blocked on the running job (spark; pipelined, less than spark_job)",
    "deliver": "driver: grouping rows by task (local)",
    "worker_arrow": "workers: Arrow batches to and from Python columns (spark)",
    "decode": "workers: envelopes to Tuple objects (spark)",
    "execute": "workers: bolt and acker code with their collectors",
    "encode": "workers: emitted tuples to the next hop or to envelopes, state snapshots to "
    "envelopes (spark)",
    "partition_critical": "workers: the slowest partition of each superstep, summed (spark)",
}
"""Every phase a profile may hold, with what it times."""


class Profile(dict[str, float]):
    """Seconds by phase name (see :data:`PHASES`)."""

    def add(self, phase: str, secs: float) -> None:
        """Add ``secs`` to ``phase``."""
        self[phase] = self.get(phase, 0.0) + secs

    def merge(self, other: dict[str, float]) -> None:
        """Add every phase of ``other``."""
        for phase, secs in other.items():
            self.add(phase, secs)
