"""Per-task statistics with Storm UI's names; the driver sums them per component.

Counts are exact. Latencies are means over every tuple. Complete latencies are kept in
2%-wide buckets (:class:`Latencies`), so that a topology that runs for days keeps a few
hundred numbers per spout task, not one per tree: their mean is exact, their p50 and p99
within 1% (a bucket's middle).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparkstorm._types import FailReason
from sparkstorm.topology.metrics import SinceStart

KEPT_POINTS = 100
"""Buckets of registered metrics a task keeps for the driver to read."""

BUCKET = math.log(1.02)
"""Complete latencies are counted in buckets 2% wide."""


@dataclass
class Latencies:
    """Complete latencies (from emit to ack), bucketed: bounded memory, exact mean."""

    buckets: dict[int, int] = field(default_factory=dict)
    """Trees per bucket: bucket ``b`` holds latencies of ``exp(b * BUCKET)`` ms and up."""
    count: int = 0
    total_secs: float = 0.0

    def add(self, secs: list[float]) -> None:
        """Count ``secs`` in (a spout task hands them over in batches: numpy buckets them)."""
        if not secs:
            return
        values = np.asarray(secs)
        self.count += len(values)
        self.total_secs += float(values.sum())
        found = np.floor(np.log(np.maximum(values * 1000, 1e-3)) / BUCKET).astype(np.int64)
        for bucket, n in zip(*np.unique(found, return_counts=True), strict=True):
            self.buckets[int(bucket)] = self.buckets.get(int(bucket), 0) + int(n)

    @classmethod
    def combined(cls, parts: Iterable[Latencies]) -> Latencies:
        """The latencies of ``parts`` together (a new object: ``parts`` are untouched)."""
        total = cls()
        for part in parts:
            total.count += part.count
            total.total_secs += part.total_secs
            for bucket, n in part.buckets.items():
                total.buckets[bucket] = total.buckets.get(bucket, 0) + n
        return total


def percentile_ms(buckets: Mapping[int, int], q: float) -> float | None:
    """The ``q`` quantile (0-1) of bucketed latencies, in ms (a bucket's middle); None if none."""
    total = sum(n for n in buckets.values() if n > 0)
    if not total:
        return None
    seen = 0
    for bucket in sorted(b for b, n in buckets.items() if n > 0):
        seen += buckets[bucket]
        if seen >= q * total:
            break
    return math.exp((bucket + 0.5) * BUCKET)


def max_ms(buckets: Mapping[int, int]) -> float | None:
    """The longest of bucketed latencies, in ms (its bucket's top: within 2%); None if none."""
    found = [b for b, n in buckets.items() if n > 0]
    return math.exp((max(found) + 1) * BUCKET) if found else None


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
    state_failures: int = 0
    """Failures that may have left a failed tree's effect in uncommitted state (stateful
    bolts: a failed or unacked input; ackers: a tree failed or expired with held acks)."""
    unready: int = 0
    """Acker: trees with a tuple not yet acked anywhere, at the end of its last superstep."""
    prepared_txid: int = -1
    """Stateful bolt: the checkpoint it last staged its changes for."""
    checkpoint_keys: int = 0
    """Stateful bolt: keys written by its checkpoints since the topology started."""
    late_tuples: int = 0
    """Windowed bolt on event time: tuples that came after the watermark had passed them."""
    batches_in: int = 0
    """Arrow bolt: record batches executed (``executed`` counts their rows)."""
    batches_out: int = 0
    """Arrow component: record batches emitted (``emitted`` counts their rows)."""
    skipped_committed: int = 0
    """Spout, after a restart: messages delivered again whose effect was committed already
    (acked, not emitted; see :mod:`sparkstorm.tasks.committed_sources`)."""
    fail_reasons: dict[str, int] = field(default_factory=dict)
    replayed_acked: int = 0
    """Spout: message ids that failed, then were acked (the spout replayed them)."""
    failed_for_good: dict[str, int] = field(default_factory=dict)
    """Spout: message ids whose last outcome is a failure and that the spout gave up on
    (it ran dry without emitting them again), by their failure's kind."""
    replay_pending: dict[str, int] = field(default_factory=dict)
    """Spout: message ids whose last outcome is a failure, that the spout may still
    replay (it has not run dry since), by their failure's kind: at a stop, cut short."""
    failed_keys: dict[Any, str] = field(default_factory=dict)
    """Continuous spout: which message keys (or ids) ``failed_for_good`` counts, up to
    :data:`~sparkstorm.tasks.spout_task.FAILED_KEYS_CARRIED`; the task's next start takes
    them on when its workers are lost or rebalanced, so that a replay acked there
    settles its message (see ``SpoutTask.carry_failures``)."""
    culprits: dict[int, FailReason] = field(default_factory=dict)
    """Stateful bolt: trees whose processing calls for the next rollback (a failed or
    raising input, a state value that cannot be stored, a window that raised), by root,
    with the reason their spout gets: they fail as their own failure, the rest of the
    rollback's trees with ``rollback`` (see ``control/checkpoints``)."""
    metric_points: list[tuple[int, float, float, list[tuple[str, Any]]]] = field(
        default_factory=list
    )
    """The registered metrics' values: (sequence number, epoch seconds, bucket seconds,
    [(name, value)]), the last :data:`KEPT_POINTS` (see ``tasks/registered_metrics``)."""
    streams: dict[str, list[int]] = field(default_factory=dict)
    """Per stream the task emitted on: [emitted, transferred] (Storm UI's output stats)."""
    stream_outcomes: dict[str, list[int]] = field(default_factory=dict)
    """Spout: per stream, [acked, failed] trees."""
    inputs: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    """Bolt: per (source component, stream), [executed, execute secs, acked, failed,
    process secs] (Storm UI's input stats; see :mod:`sparkstorm.tasks.input_stats`)."""
    complete_latencies: list[float] = field(default_factory=list)
    """Complete latencies (seconds) not yet in ``latencies``: see :meth:`fold`."""
    latencies: Latencies = field(default_factory=Latencies)

    def fold(self) -> Latencies:
        """Move ``complete_latencies`` into the buckets; the bucketed latencies so far."""
        self.latencies.add(self.complete_latencies)
        self.complete_latencies.clear()
        return self.latencies


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
    "checkpoint_keys",
    "skipped_committed",
    "late_tuples",
    "batches_in",
    "batches_out",
    "replayed_acked",
)


def by_component(tasks: list[TaskStats], superstep_secs: float) -> dict[str, dict[str, Any]]:
    """Per-component statistics (Storm UI's names) from the tasks' counters.

    ``execute_latency_ms`` and ``process_latency_ms`` are means per executed / acked
    tuple; ``capacity`` is the busiest task's share of ``superstep_secs`` (the time the
    engine spent running supersteps) spent executing: near 1, the component is what the
    supersteps wait for; low on every bolt while supersteps are long, the engine's own
    cost per superstep is. Spouts get
    ``complete_latency_ms`` (mean), ``complete_latency_p50_ms`` and
    ``complete_latency_p99_ms`` (within 1%) and ``complete_latency_max_ms`` (within 2%)
    from their acked trees. The mean is above the p99 when fewer than 1% of the trees
    took far longer than the rest (a start-up, a stall): the max then says how long.
    """
    totals: dict[str, dict[str, Any]] = {}
    for component, members in grouped(tasks).items():
        row = _counters(members, superstep_secs)
        latencies = Latencies.combined(s.fold() for s in members)
        row["complete_latency_ms"] = _mean_ms(latencies.total_secs, latencies.count)
        row["complete_latency_p50_ms"] = percentile_ms(latencies.buckets, 0.50) or 0.0
        row["complete_latency_p99_ms"] = percentile_ms(latencies.buckets, 0.99) or 0.0
        row["complete_latency_max_ms"] = max_ms(latencies.buckets) or 0.0
        row["fail_reasons"] = _kinds_summed(s.fail_reasons for s in members)
        row["failed_for_good"] = _kinds_summed(s.failed_for_good for s in members)
        row["replay_pending"] = _kinds_summed(s.replay_pending for s in members)
        row["output_stats"] = _output_stats(members)
        row["input_stats"] = _input_stats(members)
        row["metrics"] = latest_metrics(members)
        totals[component] = row
    return totals


def _kinds_summed(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Counts by kind (fail reasons), added up over tasks."""
    total: dict[str, int] = {}
    for by_kind in counts:
        for kind, n in by_kind.items():
            total[kind] = total.get(kind, 0) + n
    return total


def latest_metrics(members: list[TaskStats]) -> dict[str, Any]:
    """The newest value of each registered metric of these tasks (whichever task sent it).

    A :class:`SinceStart` value carries in the last value of each earlier life of the
    tasks (``members`` holds the stats of tasks lost or moved, then the live ones').
    """
    newest: dict[str, tuple[float, Any]] = {}
    lives: dict[str, list[Any]] = {}
    for s in members:
        last: dict[str, tuple[float, Any]] = {}
        for _, at, _, values in s.metric_points:
            for name, value in values:
                if name not in last or at >= last[name][0]:
                    last[name] = (at, value)
        for name, (at, value) in last.items():
            lives.setdefault(name, []).append(value)
            if name not in newest or at >= newest[name][0]:
                newest[name] = (at, value)
    shown = {}
    for name, (_, value) in sorted(newest.items()):
        if isinstance(value, SinceStart):
            value = value.after([v for v in lives[name] if v is not value])
        shown[name] = value
    return shown


def _output_stats(members: list[TaskStats]) -> list[dict[str, Any]]:
    """Storm UI's output stats: per stream, emitted and transferred (spouts: trees too)."""
    rows: dict[str, dict[str, Any]] = {}
    for s in members:
        for stream, (emitted, transferred) in s.streams.items():
            row = rows.setdefault(stream, _output_row(stream))
            row["emitted"] += emitted
            row["transferred"] += transferred
        for stream, (acked, failed) in s.stream_outcomes.items():
            row = rows.setdefault(stream, _output_row(stream))
            row["acked"] += acked
            row["failed"] += failed
    return [rows[stream] for stream in sorted(rows)]


def _output_row(stream: str) -> dict[str, Any]:
    return {"stream": stream, "emitted": 0, "transferred": 0, "acked": 0, "failed": 0}


def _input_stats(members: list[TaskStats]) -> list[dict[str, Any]]:
    """Storm UI's input stats: per source component and stream, executed, acked, failed."""
    sums: dict[tuple[str, str], list[float]] = {}
    for s in members:
        for source, figures in s.inputs.items():
            total = sums.setdefault(source, [0, 0.0, 0, 0, 0.0])
            for i, value in enumerate(figures):
                total[i] += value
    return [
        {
            "component": component,
            "stream": stream,
            "executed": int(executed),
            "execute_latency_ms": _mean_ms(execute_secs, int(executed)),
            "acked": int(acked),
            "failed": int(failed),
            "process_latency_ms": _mean_ms(process_secs, int(acked)),
        }
        for (component, stream), (executed, execute_secs, acked, failed, process_secs) in sorted(
            sums.items()
        )
    ]


def grouped(tasks: Iterable[TaskStats]) -> dict[str, list[TaskStats]]:
    """``tasks`` by component."""
    members: dict[str, list[TaskStats]] = {}
    for stats in tasks:
        members.setdefault(stats.component, []).append(stats)
    return members


def progress(stats: TaskStats) -> int:
    """How far a task has come: its counters only grow, so a smaller sum is an older report."""
    return stats.emitted + stats.transferred + stats.executed + stats.acked + stats.failed


def by_task(tasks: list[TaskStats], superstep_secs: float) -> dict[int, dict[str, Any]]:
    """Per-task counters, means and capacity (Storm UI's executors table), by task id.

    A spout task's row has its mean ``complete_latency_ms`` too.
    """
    rows = {}
    for s in tasks:
        row = {"component": s.component, "task": s.task, **_counters([s], superstep_secs)}
        if s.complete_latencies or s.latencies.count:
            latencies = s.fold()
            row["complete_latency_ms"] = _mean_ms(latencies.total_secs, latencies.count)
        rows[s.task] = row
    return rows


def _counters(members: list[TaskStats], superstep_secs: float) -> dict[str, Any]:
    row: dict[str, Any] = {"tasks": len({s.task for s in members})}  # a restart: once
    for key in SUMMED:
        row[key] = sum(getattr(s, key) for s in members)
    row["execute_latency_ms"] = _mean_ms(sum(s.execute_secs for s in members), row["executed"])
    row["process_latency_ms"] = _mean_ms(sum(s.process_secs for s in members), row["acked"])
    busiest = max(s.execute_secs for s in members)
    row["capacity"] = round(busiest / superstep_secs, 3) if superstep_secs > 0 else 0.0
    return row


def _mean_ms(total_secs: float, count: int) -> float:
    return 1000 * total_secs / count if count else 0.0
