"""Per-task statistics with Storm UI's names; the driver sums them per component."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


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
    complete_latency_sum: float = 0.0
    fail_reasons: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The counters as a JSON-ready dict."""
        return asdict(self)


def by_component(tasks: list[TaskStats]) -> dict[str, dict[str, Any]]:
    """Sum task counters per component; latencies become means in milliseconds."""
    totals: dict[str, dict[str, Any]] = {}
    for stats in tasks:
        row = totals.setdefault(
            stats.component,
            {
                "tasks": 0,
                "emitted": 0,
                "transferred": 0,
                "executed": 0,
                "acked": 0,
                "failed": 0,
                "execute_secs": 0.0,
                "complete_latency_sum": 0.0,
                "fail_reasons": {},
            },
        )
        row["tasks"] += 1
        for key in (
            "emitted",
            "transferred",
            "executed",
            "acked",
            "failed",
            "execute_secs",
            "complete_latency_sum",
        ):
            row[key] += getattr(stats, key)
        for kind, n in stats.fail_reasons.items():
            row["fail_reasons"][kind] = row["fail_reasons"].get(kind, 0) + n
    for row in totals.values():
        executed, acked = row.pop("execute_secs"), row.pop("complete_latency_sum")
        row["execute_latency_ms"] = 1000 * executed / row["executed"] if row["executed"] else 0.0
        row["complete_latency_ms"] = 1000 * acked / row["acked"] if row["acked"] else 0.0
    return totals
