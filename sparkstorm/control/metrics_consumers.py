"""The metrics consumers of a run, on the driver: tasks' registered metrics and Storm's built-ins.

Each task's registered metrics arrive in its statistics, numbered (``TaskStats.
metric_points``); each bucket is handed to every consumer once. Storm's built-in metrics
are the differences of each task's exact counters between two ends of
``topology.builtin.metrics.bucket.size.secs``, computed here rather than in the tasks:
``__emit-count`` and ``__transfer-count`` (per stream), ``__ack-count``,
``__fail-count`` (a spout's per stream, a bolt's per ``component:stream`` input),
``__execute-count``, ``__execute-latency``, ``__process-latency`` (a bolt's, per input;
latencies in ms) and ``__complete-latency`` (a spout's mean, ms). A consumer that raises
is logged, and the others go on.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterable
from typing import Any

from sparkstorm.config import (
    TOPOLOGY_BUILTIN_METRICS_BUCKET_SIZE_SECS,
    TOPOLOGY_METRICS_CONSUMER_REGISTER,
)
from sparkstorm.tasks.metrics import TaskStats
from sparkstorm.topology.metrics import DataPoint, TaskInfo
from sparkstorm.topology.named_classes import load_class

log = logging.getLogger(__name__)

HOST = socket.gethostname()


def load_consumers(conf: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(consumer instance, argument) for each ``topology.metrics.consumer.register`` entry."""
    return [
        (load_class(TOPOLOGY_METRICS_CONSUMER_REGISTER, entry["class"])(), entry.get("argument"))
        for entry in conf.get(TOPOLOGY_METRICS_CONSUMER_REGISTER) or []
    ]


class MetricsConsumers:
    """The consumers of one run, fed from the tasks' statistics as they arrive."""

    def __init__(self, conf: dict[str, Any]) -> None:
        loaded = load_consumers(conf)
        self.consumers = [consumer for consumer, _ in loaded]
        self.builtin_secs = float(conf[TOPOLOGY_BUILTIN_METRICS_BUCKET_SIZE_SECS])
        for consumer, argument in loaded:
            consumer.prepare(conf, argument, None, self._report)
        self._seen: dict[int, int] = {}  # task -> last metric bucket handed on
        self._last: dict[int, dict[str, Any]] = {}  # task -> counters at the last built-in bucket
        self._next_builtin = time.monotonic() + self.builtin_secs

    def observe(self, tasks: Iterable[TaskStats], final: bool = False) -> None:
        """Hand on the new buckets of registered metrics, and the built-ins when due."""
        if not self.consumers:
            return
        tasks = list(tasks)
        for stats in tasks:
            seen = self._seen.get(stats.task, 0)
            for sequence, at, bucket, values in stats.metric_points:
                if sequence > seen and values:
                    self._send(stats, at, bucket, [DataPoint(n, v) for n, v in values])
                seen = max(seen, sequence)
            self._seen[stats.task] = seen
        if final or time.monotonic() >= self._next_builtin:
            self._next_builtin = time.monotonic() + self.builtin_secs
            now = time.time()
            for stats in tasks:
                points = self._builtins(stats)
                if points:
                    self._send(stats, now, self.builtin_secs, points)

    def close(self, tasks: Iterable[TaskStats]) -> None:
        """The last buckets, then each consumer's ``cleanup``."""
        self.observe(tasks, final=True)
        for consumer in self.consumers:
            try:
                consumer.cleanup()
            except Exception as exc:
                self._report(exc)

    def _send(self, stats: TaskStats, at: float, bucket: float, points: list[DataPoint]) -> None:
        info = TaskInfo(HOST, 0, stats.component, stats.task, at, bucket)
        for consumer in self.consumers:
            try:
                consumer.handle_data_points(info, points)
            except Exception as exc:
                self._report(exc)

    def _report(self, error: BaseException) -> None:
        log.error("a metrics consumer failed: %s: %s", type(error).__name__, error)

    def _builtins(self, stats: TaskStats) -> list[DataPoint]:
        """Storm's built-in metrics of one task since its last built-in bucket."""
        now = _counters(stats)
        last = self._last.get(stats.task) or _counters(TaskStats(stats.component, stats.task))
        self._last[stats.task] = now
        points = [
            DataPoint("__emit-count", _delta(now["emitted"], last["emitted"])),
            DataPoint("__transfer-count", _delta(now["transferred"], last["transferred"])),
            DataPoint("__ack-count", _delta(now["acked"], last["acked"])),
            DataPoint("__fail-count", _delta(now["failed"], last["failed"])),
        ]
        if now["executed"] or last["executed"]:
            executed = _delta(now["executed"], last["executed"])
            points.append(DataPoint("__execute-count", executed))
            points.append(DataPoint("__execute-latency", _mean(now, last, "execute_ms", executed)))
            acked = _delta(now["acked"], last["acked"])
            points.append(DataPoint("__process-latency", _mean(now, last, "process_ms", acked)))
        if now["completed"] > last["completed"]:
            count = now["completed"] - last["completed"]
            points.append(
                DataPoint("__complete-latency", (now["complete_ms"] - last["complete_ms"]) / count)
            )
        return points


def _counters(stats: TaskStats) -> dict[str, Any]:
    """The counters the built-ins are differences of, keyed as Storm's maps are."""
    inputs = {f"{c}:{s}": figures for (c, s), figures in stats.inputs.items()}
    outcomes = stats.stream_outcomes
    latencies = stats.latencies
    return {
        "emitted": {stream: n[0] for stream, n in stats.streams.items()},
        "transferred": {stream: n[1] for stream, n in stats.streams.items()},
        "acked": {k: f[2] for k, f in inputs.items()} or {s: n[0] for s, n in outcomes.items()},
        "failed": {k: f[3] for k, f in inputs.items()} or {s: n[1] for s, n in outcomes.items()},
        "executed": {k: f[0] for k, f in inputs.items()},
        "execute_ms": {k: f[1] * 1000 for k, f in inputs.items()},
        "process_ms": {k: f[4] * 1000 for k, f in inputs.items()},
        "completed": latencies.count + len(stats.complete_latencies),
        "complete_ms": 1000 * (latencies.total_secs + sum(stats.complete_latencies)),
    }


def _delta(now: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    return {key: value - last.get(key, 0) for key, value in now.items()}


def _mean(
    now: dict[str, Any], last: dict[str, Any], key: str, counts: dict[str, Any]
) -> dict[str, float]:
    """Per input, the mean of ``key`` over the ``counts`` since the last bucket (ms)."""
    return {k: (now[key][k] - last[key].get(k, 0)) / n for k, n in counts.items() if n}
