"""Per-task statistics with Storm UI's names; the driver sums them per component.

Counts are exact. Latencies are means over every tuple, and the complete latency's p99 is
computed from every sample the spout tasks kept (one float per acked tree).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class TaskStats:
    """Cumulative counters of one task since the topology started (exact, not sampled)."""

    component: str
    task: int
    emitted: int = 0
    transferred: int = 0
    executed: int = 0
    execute_secs: float = 0.0
    acked: int = 0
    failed: int = 0
    process_secs: float = 0.0
    prepares: int = 0
    """``prepare`` calls (on Spark: at most one per Python worker the task ran in)."""
    snapshots: int = 0
    """Supersteps after which the task's state was pickled (on Spark: those it ran in)."""
    state_bytes: int = 0
    """Size of the task's last state snapshot (its attributes, pickled)."""
    snapshot_bytes: int = 0
    """Bytes of state pickled since the topology started."""
    fail_reasons: dict[str, int] = field(default_factory=dict)
    complete_latencies: list[float] = field(default_factory=list)


SUMMED = (
    "emitted",
    "transferred",
    "executed",
    "acked",
    "failed",
    "prepares",
    "snapshots",
    "state_bytes",
    "snapshot_bytes",
)


def by_component(tasks: list[TaskStats], superstep_secs: float) -> dict[str, dict[str, Any]]:
    """Per-component statistics (Storm UI's names) from the tasks' counters.

    ``execute_latency_ms`` and ``process_latency_ms`` are means per executed / acked
    tuple; ``capacity`` is the busiest task's share of ``superstep_secs`` (the time the
    engine spent running supersteps) spent executing: near 1, the component is what the
    supersteps wait for; low on every bolt while supersteps are long, the engine's own
    cost per superstep is. Spouts get
    ``complete_latency_ms`` (mean), ``complete_latency_p50_ms`` and
    ``complete_latency_p99_ms`` from their acked trees.
    """
    grouped: dict[str, list[TaskStats]] = {}
    for stats in tasks:
        grouped.setdefault(stats.component, []).append(stats)
    totals: dict[str, dict[str, Any]] = {}
    for component, members in grouped.items():
        row = _counters(members, superstep_secs)
        latencies = [x for s in members for x in s.complete_latencies]
        row["complete_latency_ms"] = _mean_ms(sum(latencies), len(latencies))
        p50, p99 = np.percentile(latencies, [50, 99]) if latencies else (0.0, 0.0)
        row["complete_latency_p50_ms"] = float(1000 * p50)
        row["complete_latency_p99_ms"] = float(1000 * p99)
        reasons: dict[str, int] = {}
        for s in members:
            for kind, n in s.fail_reasons.items():
                reasons[kind] = reasons.get(kind, 0) + n
        row["fail_reasons"] = reasons
        totals[component] = row
    return totals


def by_task(tasks: list[TaskStats], superstep_secs: float) -> dict[int, dict[str, Any]]:
    """Per-task counters, means and capacity (Storm UI's executors table), by task id."""
    return {
        s.task: {"component": s.component, "task": s.task, **_counters([s], superstep_secs)}
        for s in tasks
    }


def _counters(members: list[TaskStats], superstep_secs: float) -> dict[str, Any]:
    row: dict[str, Any] = {"tasks": len(members)}
    for key in SUMMED:
        row[key] = sum(getattr(s, key) for s in members)
    row["execute_latency_ms"] = _mean_ms(sum(s.execute_secs for s in members), row["executed"])
    row["process_latency_ms"] = _mean_ms(sum(s.process_secs for s in members), row["acked"])
    busiest = max(s.execute_secs for s in members)
    row["capacity"] = round(busiest / superstep_secs, 3) if superstep_secs > 0 else 0.0
    return row


def _mean_ms(total_secs: float, count: int) -> float:
    return 1000 * total_secs / count if count else 0.0
