"""What a running topology did over time: the page's plots and Storm UI's windows.

The driver loop records a :class:`Sample` of every component's cumulative counters
once a second (kept for 10 minutes) and once a minute (kept for a day). A window's
figures are the difference between the newest sample and the one a window earlier;
a plot's points are the differences between consecutive samples. Complete latencies
are the spout tasks' 2%-wide buckets (:class:`~sparkstorm.tasks.metrics.Latencies`),
so that a window's p50 and p99 come from a difference of two sets of buckets.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from sparkstorm.tasks.metrics import Latencies, TaskStats, grouped, max_ms, percentile_ms

COUNTERS = ("emitted", "transferred", "acked", "failed", "executed")
WINDOWS = {"600": 600.0, "10800": 10800.0, "86400": 86400.0, ":all-time": None}
"""Storm UI's windows: 10 minutes, 3 hours, 1 day, all time."""


@dataclass(frozen=True)
class Sample:
    """Cumulative figures per component at ``time`` (seconds since the epoch)."""

    time: float
    totals: dict[str, dict[str, float]]
    """Counters, ``execute_ms``/``process_ms``/``complete_ms`` sums, ``completed``, and
    ``failed:REASON`` per fail reason."""
    latencies: dict[str, dict[int, int]]
    """Per spout: complete latencies so far, as counts per bucket."""


class History:
    """Samples of a running topology; recorded by the driver loop, read by the API."""

    def __init__(self, started: float, fine_secs: float = 1.0, coarse_secs: float = 60.0) -> None:
        self.fine_secs, self.coarse_secs = fine_secs, coarse_secs
        empty = Sample(started, {}, {})
        self.fine: deque[Sample] = deque([empty], maxlen=int(600 / fine_secs) + 1)
        self.coarse: deque[Sample] = deque([empty], maxlen=int(86400 / coarse_secs) + 1)
        self.kinds: dict[str, str] = {}
        self.lock = threading.Lock()

    def record(
        self, now: float, stats: dict[str, dict[str, Any]], spouts: Iterable[TaskStats]
    ) -> None:
        """Take a sample if one is due; ``stats`` is the runtime's, per component."""
        if now - self.fine[-1].time < self.fine_secs:
            return
        latencies = {
            c: Latencies.combined(t.fold() for t in tasks) for c, tasks in grouped(spouts).items()
        }
        totals = {}
        for component, row in stats.items():
            figures = {key: float(row.get(key, 0)) for key in COUNTERS}
            figures["execute_ms"] = row.get("execute_latency_ms", 0.0) * row.get("executed", 0)
            figures["process_ms"] = row.get("process_latency_ms", 0.0) * row.get("acked", 0)
            spout = latencies.get(component, Latencies())
            figures["complete_ms"] = 1000 * spout.total_secs
            figures["completed"] = float(spout.count)
            for reason, count in row.get("fail_reasons", {}).items():
                figures[f"failed:{reason}"] = float(count)
            totals[component] = figures
        sample = Sample(now, totals, {c: spout.buckets for c, spout in latencies.items()})
        with self.lock:
            self.kinds.update((component, row["kind"]) for component, row in stats.items())
            self.fine.append(sample)
            if now - self.coarse[-1].time >= self.coarse_secs:
                self.coarse.append(sample)

    def window(self, secs: float) -> dict[str, dict[str, Any]]:
        """Per component, what happened in the last ``secs`` (Storm UI's window figures)."""
        with self.lock:
            newest = self.fine[-1]
            older = self._at(newest.time - secs)
        return {c: _difference(newest, older, c) for c in newest.totals}

    def series(self, secs: float) -> dict[str, Any]:
        """Per-second rates and latency percentiles over the last ``secs``, for plots."""
        with self.lock:
            whole_run = len(self.fine) < (self.fine.maxlen or 0)  # the run is that young
            samples = list(self.fine if secs <= 600 or whole_run else self.coarse)
            kinds = dict(self.kinds)
        samples = [s for s in samples if s.time >= samples[-1].time - secs - 1e-9]
        pairs = list(pairwise(samples))
        components: dict[str, dict[str, list[float | None]]] = {}
        reasons: dict[str, list[float]] = {}
        for component, kind in kinds.items():
            points = [_difference(new, old, component) for old, new in pairs]
            spans = [new.time - old.time for old, new in pairs]
            keys = ("emitted", "acked", "failed") if kind == "spout" else ("executed", "failed")
            series: dict[str, list[float | None]] = {
                key: [round(p[key] / span, 3) for p, span in zip(points, spans, strict=True)]
                for key in keys
            }
            if kind == "spout":
                series["p50"] = [p["completeLatencyP50"] for p in points]
                series["p99"] = [p["completeLatencyP99"] for p in points]
                for i, (p, span) in enumerate(zip(points, spans, strict=True)):
                    for reason, count in p["failReasons"].items():
                        reasons.setdefault(reason, [0.0] * len(points))[i] += count / span
            components[component] = {"kind": kind, **series}  # type: ignore[dict-item]
        return {
            "window": secs,
            "time": [new.time for _, new in pairs],
            "components": components,
            "failReasons": {r: [round(v, 3) for v in values] for r, values in reasons.items()},
        }

    def _at(self, when: float) -> Sample:
        """The newest sample taken at or before ``when`` (the first one if none is)."""
        for samples in (self.fine, self.coarse):
            if samples[0].time <= when:
                return next(s for s in reversed(samples) if s.time <= when)
        return self.coarse[0]


def _difference(new: Sample, old: Sample, component: str) -> dict[str, Any]:
    """Storm UI's figures for ``component`` between two samples."""
    now, before = new.totals.get(component, {}), old.totals.get(component, {})
    # at least 0: a counter that went down (a worker's report older than the one before,
    # a restart's figures not carried over) shows nothing happened, never a negative count
    delta = {key: max(0.0, now.get(key, 0.0) - before.get(key, 0.0)) for key in now.keys() | before}
    figures: dict[str, Any] = {key: int(delta.get(key, 0)) for key in COUNTERS}
    figures["executeLatency"] = _mean(delta.get("execute_ms", 0.0), figures["executed"])
    figures["processLatency"] = _mean(delta.get("process_ms", 0.0), figures["acked"])
    figures["completeLatency"] = _mean(delta.get("complete_ms", 0.0), delta.get("completed", 0))
    histogram = Counter(new.latencies.get(component, {}))
    histogram.subtract(old.latencies.get(component, {}))
    histogram = +histogram  # the buckets that grew
    figures["completeLatencyP50"] = _rounded(percentile_ms(histogram, 0.50))
    figures["completeLatencyP99"] = _rounded(percentile_ms(histogram, 0.99))
    figures["completeLatencyMax"] = _rounded(max_ms(histogram))
    figures["failReasons"] = {
        key.removeprefix("failed:"): int(n)
        for key, n in delta.items()
        if key.startswith("failed:") and n
    }
    return figures


def _rounded(ms: float | None) -> float | None:
    return None if ms is None else round(ms, 3)


def _mean(total: float, count: float) -> float:
    return round(total / count, 3) if count else 0.0
