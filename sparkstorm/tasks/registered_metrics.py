"""A task's registered metrics, read at the end of each bucket into its statistics.

On Spark's superstep mode the metrics travel in the task's snapshot together with the
bolt's attributes (one pickle), so the objects the bolt updates stay the ones read here.

The values travel to the driver in the task's ``TaskStats.metric_points``, numbered, so
the driver hands each bucket to the consumers once (``control/metrics_consumers``); a
task keeps the last :data:`~sparkstorm.tasks.metrics.KEPT_POINTS` buckets. A bucket ends
in topology time and is read at the task's next turn after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sparkstorm.tasks.metrics import KEPT_POINTS, TaskStats


class RegisteredMetrics:
    """The metrics one task registered, grouped by bucket length, and when each is due."""

    def __init__(self, metrics: list[tuple[str, Any, float]]) -> None:
        self.by_bucket: dict[float, list[tuple[str, Any]]] = {}
        for name, metric, bucket in metrics:
            self.by_bucket.setdefault(bucket, []).append((name, metric))
        self.due: dict[float, float] = {}
        self.sequence = 0

    def collect(
        self,
        now: float,
        stats: TaskStats,
        report: Callable[[BaseException], None],
        *,
        last: bool = False,
    ) -> None:
        """Read the metrics whose bucket ended by topology time ``now`` into ``stats``.

        ``last``: the task is cleaned up or closed; every bucket under way is read. An
        exception in a metric is given to ``report``.
        """
        for bucket, metrics in self.by_bucket.items():
            due = self.due.setdefault(bucket, now + bucket)
            if now < due and not last:
                continue
            self.due[bucket] = now + bucket
            values = []
            for name, metric in metrics:
                try:
                    value = metric.get_value_and_reset()
                except Exception as exc:
                    report(exc)
                    continue
                if value is not None:
                    values.append((name, value))
            self.sequence += 1
            stats.metric_points.append((self.sequence, time.time(), bucket, values))
            del stats.metric_points[:-KEPT_POINTS]
