"""The run's figures in Prometheus' exposition format, for ``GET /metrics``.

Named after Storm's built-in metrics (``__emit-count`` is ``sparkstorm_emit_count``,
``__complete-latency`` is ``sparkstorm_complete_latency_ms``...), with Prometheus'
suffixes and labels: ``topology``, ``component``, and ``stream``, ``task``,
``reason`` or ``worker`` where a figure is kept that finely. Counters are the run's
totals since it started; latencies are all-time means and percentiles, as the REST
API's "All time" row. Made afresh at each scrape from the snapshot the driver
publishes every half second, by prometheus_client, which writes the format.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from sparkstorm.control.api_model import Control
from sparkstorm.control.api_views import batch_sizes, trident_batches

STATUSES = ("STARTING", "ACTIVE", "INACTIVE", "REBALANCING", "KILLED", "HALTED")

COMPONENT_COUNTERS = (
    ("emitted", "emit_count", "Tuples (rows) emitted: Storm's __emit-count"),
    ("transferred", "transfer_count", "Tuples (rows) sent to tasks: Storm's __transfer-count"),
    ("executed", "execute_count", "Tuples (rows) executed by a bolt: Storm's __execute-count"),
    ("acked", "ack_count", "Tuples acked (a spout: messages fully processed): __ack-count"),
    ("failed", "fail_count", "Tuples failed (a spout: messages failed): Storm's __fail-count"),
    ("batches_in", "batches_executed", "Record batches executed (an Arrow bolt)"),
    ("batches_out", "batches_emitted", "Record batches emitted (an Arrow component)"),
)
COMPONENT_GAUGES = (
    ("complete_latency_ms", "complete_latency_ms", "Mean complete latency: __complete-latency"),
    ("complete_latency_p50_ms", "complete_latency_p50_ms", "Complete latency, median"),
    ("complete_latency_p99_ms", "complete_latency_p99_ms", "Complete latency, 99th percentile"),
    ("execute_latency_ms", "execute_latency_ms", "Mean execute latency: __execute-latency"),
    ("process_latency_ms", "process_latency_ms", "Mean process latency: __process-latency"),
    ("pending", "pending", "Messages emitted by a spout and not yet acked or failed"),
    ("capacity", "capacity", "Share of the time a bolt executed (1: always busy)"),
)
TASK_COUNTERS = (
    ("emitted", "task_emit_count", "Tuples (rows) emitted by one task"),
    ("executed", "task_execute_count", "Tuples (rows) executed by one task"),
    ("acked", "task_ack_count", "Tuples acked by one task"),
    ("failed", "task_fail_count", "Tuples failed by one task"),
)


class RunCollector(Collector):
    """Every figure of one run, read from its control's latest snapshot at each scrape."""

    def __init__(self, control: Control) -> None:
        self.control = control

    def collect(self) -> Iterator[Metric]:
        """The metric families of one scrape, from the latest snapshot."""
        control, snap = self.control, self.control.snapshot
        topology = control.name
        status = GaugeMetricFamily(
            "sparkstorm_topology_status", "1 for the run's status", labels=["topology", "status"]
        )
        for name in STATUSES:
            status.add_metric([topology, name], float(snap.status == name))
        yield status
        yield _gauge("topology_in_flight", "Tuples in flight", topology, snap.in_flight)
        yield _counter("restarts", "Workers or supersteps restarted", topology, snap.restart_count)
        errors = sum(e.count for e in snap.errors) + snap.errors_let_go
        yield _counter("errors", "Errors reported by the components", topology, errors)
        yield from _components(topology, snap.stats)
        yield from _tasks(topology, snap.tasks)
        yield from _workers(topology, snap.workers)
        yield from _trident(topology, snap.stats)


def registry_of(control: Control) -> CollectorRegistry:
    """A registry of its own for ``control``'s run (never the process-wide default)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RunCollector(control))
    return registry


def _gauge(name: str, about: str, topology: str, value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"sparkstorm_{name}", about, labels=["topology"])
    family.add_metric([topology], value)
    return family


def _counter(name: str, about: str, topology: str, value: float) -> CounterMetricFamily:
    family = CounterMetricFamily(f"sparkstorm_{name}", about, labels=["topology"])
    family.add_metric([topology], value)
    return family


def _components(topology: str, stats: dict[str, dict[str, Any]]) -> Iterator[Metric]:
    labels = ["topology", "component"]
    for key, name, about in COMPONENT_COUNTERS:
        family = CounterMetricFamily(f"sparkstorm_{name}", about, labels=labels)
        for cid, row in stats.items():
            if key in row and not (key.startswith("batches") and not row[key]):
                family.add_metric([topology, cid], row[key])
        yield family
    for key, name, about in COMPONENT_GAUGES:
        gauge = GaugeMetricFamily(f"sparkstorm_{name}", about, labels=labels)
        for cid, row in stats.items():
            if row.get(key) is not None and _applies(key, row):
                gauge.add_metric([topology, cid], row[key])
        yield gauge
    reasons = CounterMetricFamily(
        "sparkstorm_fail_reason_count",
        "Messages a spout had failed, by reason (timeout, explicit, error, shutdown...)",
        labels=[*labels, "reason"],
    )
    for cid, row in stats.items():
        for reason, count in (row.get("fail_reasons") or {}).items():
            reasons.add_metric([topology, cid, reason], count)
    yield reasons
    rows = GaugeMetricFamily(
        "sparkstorm_rows_per_batch",
        "Rows per record batch, executed (in) and emitted (out), of an Arrow component",
        labels=[*labels, "direction"],
    )
    for cid, row in stats.items():
        sizes = batch_sizes(row)
        for field, direction in (("rowsPerBatchExecuted", "in"), ("rowsPerBatchEmitted", "out")):
            if sizes[field] is not None:
                rows.add_metric([topology, cid, direction], sizes[field])
    yield rows
    yield from _streams(topology, stats)


def _applies(key: str, row: dict[str, Any]) -> bool:
    """Whether a gauge means something for the component: latencies of trees for spouts."""
    spout = row.get("kind") == "spout"
    if key.startswith("complete") or key == "pending":
        return spout
    return not spout


def _streams(topology: str, stats: dict[str, dict[str, Any]]) -> Iterator[Metric]:
    """Per stream emitted on, and per input stream executed: Storm UI's output/input stats."""
    emitted = CounterMetricFamily(
        "sparkstorm_stream_emit_count",
        "Tuples (rows) emitted on a stream",
        labels=["topology", "component", "stream"],
    )
    executed = CounterMetricFamily(
        "sparkstorm_stream_execute_count",
        "Tuples (rows) executed from a source component's stream",
        labels=["topology", "component", "source", "stream"],
    )
    for cid, row in stats.items():
        for out in row.get("output_stats") or []:
            emitted.add_metric([topology, cid, out["stream"]], out["emitted"])
        for into in row.get("input_stats") or []:
            executed.add_metric(
                [topology, cid, into["component"], into["stream"]], into["executed"]
            )
    yield emitted
    yield executed


def _tasks(topology: str, tasks: dict[str, list[dict[str, Any]]]) -> Iterator[Metric]:
    labels = ["topology", "component", "task"]
    for key, name, about in TASK_COUNTERS:
        family = CounterMetricFamily(f"sparkstorm_{name}", about, labels=labels)
        for cid, rows in tasks.items():
            for row in rows:
                family.add_metric([topology, cid, str(row["task"])], row.get(key, 0))
        yield family
    capacity = GaugeMetricFamily(
        "sparkstorm_task_capacity", "Share of the time one task executed", labels=labels
    )
    for cid, rows in tasks.items():
        for row in rows:
            capacity.add_metric([topology, cid, str(row["task"])], row.get("capacity", 0.0))
    yield capacity


def _workers(topology: str, workers: list[dict[str, Any]]) -> Iterator[Metric]:
    """The continuous mode's workers: memory and tasks held."""
    labels = ["topology", "worker", "host"]
    memory = GaugeMetricFamily(
        "sparkstorm_worker_memory_mb", "Resident memory of a worker process", labels=labels
    )
    held = GaugeMetricFamily("sparkstorm_worker_tasks", "Tasks a worker holds", labels=labels)
    for worker in workers:
        at = [topology, str(worker.get("worker")), str(worker.get("host"))]
        if worker.get("memoryMb") is not None:
            memory.add_metric(at, worker["memoryMb"])
        held.add_metric(at, len(worker.get("tasks") or []))
    yield memory
    yield held


def _trident(topology: str, stats: dict[str, dict[str, Any]]) -> Iterator[Metric]:
    """A Trident topology's batches: the last txid committed, counts, latencies."""
    batches = trident_batches(stats)
    if batches is None:
        return
    txid = batches["committedTxid"]
    yield _gauge("trident_committed_txid", "The last Trident txid committed", topology, txid)
    yield _counter(
        "trident_batches_committed",
        "Trident batches committed with tuples",
        topology,
        batches["committedBatches"],
    )
    yield _counter("trident_replays", "Trident batches replayed", topology, batches["replays"])
    yield _gauge("trident_batches_in_flight", "Batches in flight", topology, batches["inFlight"])
    latency = GaugeMetricFamily(
        "sparkstorm_trident_batch_ms",
        "Trident batch latency: processing and commit, by quantile",
        labels=["topology", "phase", "quantile"],
    )
    for phase, quantile, key in (
        ("processing", "0.5", "processingMsP50"),
        ("processing", "0.99", "processingMsP99"),
        ("commit", "0.5", "commitMsP50"),
    ):
        if batches.get(key) is not None:
            latency.add_metric([topology, phase, quantile], batches[key])
    yield latency
