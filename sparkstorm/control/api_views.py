"""The REST API's JSON: Storm UI's shapes, made from the run loop's :class:`Snapshot`."""

from __future__ import annotations

import json
import os
import platform
import socket
import time
from importlib import metadata
from typing import Any

from sparkstorm.config import (
    SPARKSTORM_DRPC_SERVER,
    SPARKSTORM_RUN_MEMORY,
    SPARKSTORM_STATE_SECRET,
    SPARKSTORM_UI_TOKEN,
)
from sparkstorm.control.api_model import DEBUG_EVENTS, TRIDENT_METRIC, Control, Snapshot
from sparkstorm.control.history import WINDOWS
from sparkstorm.control.masking import masked
from sparkstorm.topology.plan import Plan

HOST = socket.gethostname()


def topology_graph(plan: Plan) -> dict[str, Any]:
    """Components (id, kind, tasks) and edges (from, to, stream, grouping, label): the DAG.

    An edge's label is what flows on it and how it is dealt: the stream's fields, then
    its grouping (``word · fields(word)``), after the stream's name unless ``default``;
    a bolt that describes its inputs (Trident's, whose streams are internal ids) gives
    its own.
    """
    topology = plan.topology
    described = {
        bolt.component_id: labels()
        for bolt in topology.bolts
        if callable(labels := getattr(bolt.obj, "input_labels", None))
    }
    components = [
        {
            "id": c.component_id,
            "kind": "spout" if c.is_spout else "bolt",
            "tasks": len(plan.component_tasks(c.component_id)),
        }
        for c in topology.components.values()
    ]
    edges = [
        {
            "from": source.component_id,
            "to": bolt.component_id,
            "stream": source.stream_id,
            "grouping": grouping.kind,
            "fields": list(grouping.fields) if grouping.fields is not None else None,
            "label": described.get(bolt.component_id, {}).get(
                source.stream_id, _flowing(topology, source, grouping)
            ),
        }
        for bolt in topology.bolts
        for source, grouping in bolt.inputs
    ]
    return {"components": components, "edges": edges}


def _flowing(topology: Any, source: Any, grouping: Any) -> str:
    """``[stream: ]fields · grouping``: an edge's label in a core topology."""
    spec = topology.components.get(source.component_id)
    info = spec.streams.get(source.stream_id) if spec is not None else None
    fields = ", ".join(info.fields.to_list()) if info is not None else ""
    dealt = grouping.kind + (f"({', '.join(grouping.fields)})" if grouping.fields else "")
    said = f"{fields or '(no fields)'} · {dealt}"
    return said if source.stream_id == "default" else f"{source.stream_id}: {said}"


def shown_configuration(conf: dict[str, Any]) -> dict[str, Any]:
    """``conf`` as the API shows it: secrets masked.

    Secrets by what they mean, at any depth and in JSON text (``control/masking.py``);
    the UI's token, the state secret, and the key and box of the DRPC server and of the
    run's memory (whoever has them can put requests to the run, or write its state).
    """

    def shown(key: str, value: Any) -> Any:
        if key in (SPARKSTORM_UI_TOKEN, SPARKSTORM_STATE_SECRET) and value:
            return "***"
        if key in (SPARKSTORM_DRPC_SERVER, SPARKSTORM_RUN_MEMORY) and value:
            return f"{str(value).rpartition('/')[0].partition('?')[0]}/***"
        return masked(key, value)

    return {key: shown(key, value) for key, value in sorted(conf.items())}


def _uptime(secs: float) -> str:
    secs = int(secs)
    days, secs = divmod(secs, 86400)
    hours, secs = divmod(secs, 3600)
    minutes, secs = divmod(secs, 60)
    return (f"{days}d " if days else "") + f"{hours}h {minutes}m {secs}s"


def summary_json(control: Control) -> dict[str, Any]:
    """Storm UI's topology summary: status, uptime, workers, executors, memory, version."""
    snap = control.snapshot
    up = time.time() - control.started
    tasks = sum(row.get("tasks", 0) for row in snap.stats.values())
    return {
        "id": control.name,
        "name": control.name,
        "status": snap.status,
        "ended": snap.ended,
        "final": snap.final,
        "engine": control.engine,
        "mode": control.mode,
        "master": control.master,
        "sparkUi": control.spark_ui,
        "uptime": _uptime(up),
        "uptimeSeconds": round(up, 1),
        "supersteps": snap.supersteps,
        "inFlight": snap.in_flight,
        "checkpoints": snap.checkpoints,
        "trident": trident_batches(snap.stats),
        "workersTotal": len(snap.workers) or (1 if control.mode == "local" else None),
        "executorsTotal": tasks,
        "tasksTotal": tasks,
        "memoryMb": _memory_mb(snap),
        "errorsTotal": sum(e.count for e in snap.errors) + snap.errors_let_go,
        **VERSIONS,
        "sparkVersion": VERSIONS["sparkVersion"] if control.engine != "local" else None,
    }


def _memory_mb(snap: Snapshot) -> float | None:
    """The resident memory of the driver and of each worker process apart from it."""
    if snap.driver is None:
        return None
    driver_pid = os.getpid()
    workers = {w["pid"]: w.get("memoryMb") or 0.0 for w in snap.workers if w["pid"] != driver_pid}
    return round(snap.driver.rss_bytes / 2**20 + sum(workers.values()), 1)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


VERSIONS = {
    "version": _version("sparkstorm"),
    "sparkVersion": _version("pyspark"),
    "pythonVersion": platform.python_version(),
}
"""What the summary says runs: sparkstorm's, PySpark's (Spark engine) and Python's versions."""


def _last_error(control: Control, component: str) -> str:
    mine = [e for e in control.snapshot.errors if e.component == component]
    return mine[-1].message.splitlines()[0] if mine else ""


def component_json(
    control: Control, component: str, row: dict[str, Any], window: dict[str, Any] | None
) -> dict[str, Any]:
    """One row of Storm UI's spouts or bolts table.

    ``window`` replaces the all-time counters and latencies with a window's (see
    :meth:`History.window`).
    """
    common = {
        "tasks": row.get("tasks", 0),
        "emitted": row.get("emitted", 0),
        "transferred": row.get("transferred", 0),
        "acked": row.get("acked", 0),
        "failed": row.get("failed", 0),
        "lastError": _last_error(control, component),
        "metrics": _as_json(row.get("metrics", {})),
        **batch_sizes(row),
    }
    if row.get("kind") == "spout":
        shown = {
            "spoutId": component,
            **common,
            "pending": row.get("pending", 0),
            "completeLatency": round(row.get("complete_latency_ms", 0.0), 3),
            "completeLatencyP50": round(row.get("complete_latency_p50_ms", 0.0), 3),
            "completeLatencyP99": round(row.get("complete_latency_p99_ms", 0.0), 3),
            "completeLatencyMax": round(row.get("complete_latency_max_ms", 0.0), 3),
            "failReasons": row.get("fail_reasons", {}),
            "spoutBatch": row.get("spout_batch"),
        }
    else:
        shown = {
            "boltId": component,
            **common,
            "executed": row.get("executed", 0),
            "executeLatency": round(row.get("execute_latency_ms", 0.0), 3),
            "processLatency": round(row.get("process_latency_ms", 0.0), 3),
            "capacity": row.get("capacity", 0.0),
            "prepares": row.get("prepares", 0),
        }
    if window is not None:
        shown.update((key, value) for key, value in window.items() if key in shown)
    return shown


def batch_sizes(row: dict[str, Any]) -> dict[str, Any]:
    """An Arrow component's record batches beside its rows: how many, and their mean rows.

    Counters stay rows (messages), as Storm's count tuples; the batches say how they
    travelled. None for a component that moves tuples.
    """
    batches_in, batches_out = row.get("batches_in", 0), row.get("batches_out", 0)
    return {
        "batchesExecuted": batches_in or None,
        "rowsPerBatchExecuted": round(row.get("executed", 0) / batches_in, 1)
        if batches_in
        else None,
        "batchesEmitted": batches_out or None,
        "rowsPerBatchEmitted": round(row.get("emitted", 0) / batches_out, 1)
        if batches_out
        else None,
    }


def _as_json(value: Any) -> Any:
    """``value`` as JSON carries it: what JSON has no type for, as its ``str``."""
    return json.loads(json.dumps(value, default=str))


def trident_batches(stats: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """A Trident topology's batches: its coordinator's latest metric ``trident``."""
    for row in stats.values():
        if TRIDENT_METRIC in row.get("metrics", {}):
            return _as_json(row["metrics"][TRIDENT_METRIC])  # type: ignore[no-any-return]
    return None


def output_stats(row: dict[str, Any]) -> list[dict[str, Any]]:
    """Storm UI's output stats (all time): per stream; a spout's also trees acked, failed."""
    spout = row.get("kind") == "spout"
    return [
        {
            "stream": s["stream"],
            "emitted": s["emitted"],
            "transferred": s["transferred"],
            **({"acked": s["acked"], "failed": s["failed"]} if spout else {}),
        }
        for s in row.get("output_stats", [])
    ]


def input_stats(row: dict[str, Any]) -> list[dict[str, Any]]:
    """Storm UI's input stats (all time): per source component and stream."""
    return [
        {
            "component": s["component"],
            "stream": s["stream"],
            "executed": s["executed"],
            "executeLatency": round(s["execute_latency_ms"], 3),
            "processLatency": round(s["process_latency_ms"], 3),
            "acked": s["acked"],
            "failed": s["failed"],
        }
        for s in row.get("input_stats", [])
    ]


def task_json(row: dict[str, Any], where: dict[int, Any]) -> dict[str, Any]:
    """One row of Storm UI's executors table (all time), with where the task runs."""
    worker, host, up = where.get(row["task"], (None, None, None))
    return {
        "id": f"[{row['task']}-{row['task']}]",
        "task": row["task"],
        "emitted": row["emitted"],
        "transferred": row["transferred"],
        "executed": row["executed"],
        "acked": row["acked"],
        "failed": row["failed"],
        "executeLatency": round(row["execute_latency_ms"], 3),
        "processLatency": round(row["process_latency_ms"], 3),
        "capacity": row["capacity"],
        "prepares": row["prepares"],
        "pending": row.get("pending"),
        "stateBytes": row["state_bytes"],
        "completeLatency": round(row.get("complete_latency_ms", 0.0), 3),
        "worker": worker,
        "host": host,
        "uptime": None if up is None else _uptime(up),
        "uptimeSeconds": None if up is None else round(up, 1),
    }


WINDOW_NAMES = {"600": "10m", "10800": "3h", "86400": "1d", ":all-time": "All time"}
"""Storm UI's names of its windows."""


def _all_time(row: dict[str, Any]) -> dict[str, Any]:
    """A component's all-time figures, under the names a window's figures have."""
    return {
        "emitted": row.get("emitted", 0),
        "transferred": row.get("transferred", 0),
        "acked": row.get("acked", 0),
        "failed": row.get("failed", 0),
        "executed": row.get("executed", 0),
        "completeLatency": round(row.get("complete_latency_ms", 0.0), 3),
        "executeLatency": round(row.get("execute_latency_ms", 0.0), 3),
        "processLatency": round(row.get("process_latency_ms", 0.0), 3),
    }


def _by_window(control: Control) -> list[tuple[str, dict[str, dict[str, Any]]]]:
    """Every window of Storm UI, each with its figures per component, side by side."""
    stats = control.snapshot.stats
    return [
        (name, control.history.window(secs))
        if secs is not None
        else (name, {c: _all_time(row) for c, row in stats.items()})
        for name, secs in WINDOWS.items()
    ]


def topology_stats(control: Control, system: bool) -> list[dict[str, Any]]:
    """Storm UI's topology stats: a row per window.

    Emitted and transferred by every component shown; trees acked and failed, and
    their complete latency, by the spouts.
    """
    kinds = {c: row.get("kind") for c, row in control.snapshot.stats.items()}
    rows = []
    for name, figures in _by_window(control):
        shown = {c: f for c, f in figures.items() if c in kinds and (system or not is_system(c))}
        spouts = [f for c, f in shown.items() if kinds[c] == "spout"]
        acked = sum(f["acked"] for f in spouts)
        latency = sum(f["completeLatency"] * f["acked"] for f in spouts)
        rows.append(
            {
                "window": name,
                "windowPretty": WINDOW_NAMES[name],
                "emitted": sum(f["emitted"] for f in shown.values()),
                "transferred": sum(f["transferred"] for f in shown.values()),
                "acked": acked,
                "failed": sum(f["failed"] for f in spouts),
                "completeLatency": round(latency / acked, 3) if acked else 0.0,
            }
        )
    return rows


def component_windows(control: Control, component: str, spout: bool) -> list[dict[str, Any]]:
    """Storm UI's spout or bolt stats of one component: a row per window."""
    keys: tuple[str, ...] = ("emitted", "transferred", "acked", "failed")
    keys += ("completeLatency",) if spout else ("executed", "executeLatency", "processLatency")
    rows = []
    for name, figures in _by_window(control):
        mine = figures.get(component, {})
        row = {key: mine.get(key, 0) for key in keys}
        rows.append({"window": name, "windowPretty": WINDOW_NAMES[name], **row})
    return rows


def debug_of(shares: Any) -> dict[str, Any]:
    """Storm UI's ``debug`` and ``samplingPct``: on where any share is, at the largest."""
    largest = max(shares, default=0.0)
    return {"debug": largest > 0, "samplingPct": round(100 * largest, 3)}


def events_of(snap: Snapshot, component: str) -> list[dict[str, Any]]:
    """The latest debug lines about ``component``: its emits, and its tasks' acks and fails."""
    marks = [f" {component} "] + [f"TASK: {t['task']} " for t in snap.tasks.get(component, [])]
    mine = [(at, line) for at, line in snap.debug_events if any(m in line for m in marks)]
    return [{"at": round(at, 3), "line": line} for at, line in mine[-DEBUG_EVENTS:]]


def continuous_workers(control: Control) -> dict[str, dict[str, Any]]:
    """The continuous mode's workers by number: the processes the driver can ask things.

    The superstep mode's Python workers are Spark's, which the driver cannot reach.
    """
    if control.mode != "continuous":
        return {}
    return {str(w["worker"]): w for w in control.snapshot.workers}


def is_system(component: str) -> bool:
    """Storm's system components (``__acker``, ``__system``), hidden unless asked for."""
    return component.startswith("__")


def placement(control: Control) -> dict[int, tuple[int | None, str | None, float | None]]:
    """Task -> (worker, host, worker's uptime in seconds), where it is known.

    The continuous mode's tasks stay on their workers; the local engine's run in the
    driver; a superstep's run wherever Spark puts them, so none is known there.
    """
    snap = control.snapshot
    if control.mode == "local":
        up = time.time() - control.started
        return {t["task"]: (None, HOST, up) for rows in snap.tasks.values() for t in rows}
    workers = {w["worker"]: w for w in snap.workers}
    where = {}
    for rows in snap.tasks.values():
        for t in rows:
            worker = workers.get(t.get("worker"), {})
            where[t["task"]] = (t.get("worker"), worker.get("host"), worker.get("uptimeSeconds"))
    return where


def shown_error(control: Control, error: Any, where: dict[int, Any]) -> dict[str, Any]:
    """One error as the API shows it: when, which task, worker and host, the traceback."""
    snap = control.snapshot
    worker, host, _ = where.get(error.task, (None, None, None))
    return {
        "time": error.time,
        "at": round(snap.taken - snap.topology_secs + error.time, 3),
        "component": error.component,
        "task": error.task,
        "worker": worker,
        "host": host,
        "count": error.count,
        "error": error.message,
        "traceback": error.traceback or None,
    }
