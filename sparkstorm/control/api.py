"""The REST API of a running topology, shaped after Storm UI's ``/api/v1``.

The driver loop owns the runtime; the server thread never touches it. The loop
publishes a :class:`Snapshot` now and then, which the API serves, and takes the
commands the API puts on ``Control.commands`` between supersteps.

Read-only routes are open. The control routes (activate, deactivate, rebalance, kill)
and DRPC calls need the token (header ``Authorization: Bearer TOKEN``) unless the server listens on
loopback.
The web page (``/``, ``/component/ID``) is static HTML and JavaScript that reads this
API, so the page shows what the API shows.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import platform
import queue
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sparkstorm.config import SPARKSTORM_DRPC_SERVER, SPARKSTORM_RUN_MEMORY, SPARKSTORM_UI_TOKEN
from sparkstorm.control import registry
from sparkstorm.control.drpc import DRPCServer
from sparkstorm.control.history import WINDOWS, History
from sparkstorm.errors import DRPCExecutionError
from sparkstorm.tasks.log_levels import LEVELS
from sparkstorm.tasks.process_usage import ProcessUsage
from sparkstorm.tasks.stacks import thread_stacks
from sparkstorm.topology.plan import Plan
from sparkstorm.urls import redacted

ACTIVATE, DEACTIVATE, KILL, REBALANCE = "activate", "deactivate", "kill", "rebalance"
STACKS, DEBUG, PROFILE, LOG_LEVEL = "stacks", "debug", "profile", "log_level"
MAX_PROFILE_SECS = 300
DEBUG_EVENTS = 200
"""The latest debug lines the topology's answer lists."""
STACKS_WAIT_SECS = 10.0
"""How long a stack dump of a worker may take to come back."""
TRIDENT_METRIC = "trident"
"""The metric a Trident coordinator reports its batches in (``trident/watching.py``)."""


class Command(NamedTuple):
    """An operator's action for the driver loop, as the API received it."""

    action: str
    wait: float | None = None
    """Kill and rebalance: the longest the drain may last, in seconds."""
    workers: int | None = None
    """Rebalance: how many workers to place the tasks over (None: as many as now).
    Stacks: the worker to dump the threads of."""
    component: str | None = None
    """Debug: the component (None: every one)."""
    percent: float = 0.0
    """Debug: the sampling percentage (0: off)."""
    level: str | None = None
    """Log level: the level to set ``component`` (here a logger's name) to, for ``wait``."""


@dataclass
class Snapshot:
    """What the API shows: the runtime's statistics and errors as of ``taken``."""

    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[Any] = field(default_factory=list)
    tasks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Per component, its tasks' statistics."""
    status: str = "STARTING"
    supersteps: int = 0
    in_flight: int = 0
    checkpoints: dict[str, Any] | None = None
    """Stateful topologies: the last commit, the phase, commits and rollbacks."""
    workers: list[dict[str, Any]] = field(default_factory=list)
    """The continuous mode's workers: host, process, tasks, queue depth, traffic."""
    restarts: list[dict[str, Any]] = field(default_factory=list)
    """The latest restarts after lost workers or supersteps: when, which worker, why."""
    restart_count: int = 0
    """Every restart over the run's life (``restarts`` keeps the latest)."""
    slots: int | None = None
    """The continuous mode: the task slots the cluster has now (the most workers a
    rebalance may ask for); None in the other modes."""
    topology_secs: float = 0.0
    """Topology time when the snapshot was taken (errors' times are topology times)."""
    driver: ProcessUsage | None = None
    """The driver's process: memory, CPU time, when the run started."""
    errors_let_go: int = 0
    """Occurrences of errors the run no longer keeps (see ``KeptErrors``)."""
    stacks: dict[int, tuple[float, str]] = field(default_factory=dict)
    """The continuous mode: per worker, its latest dump of its threads (when, text)."""
    debug_shares: dict[str, float] = field(default_factory=dict)
    """Storm UI's Debug: each component's share of calls noted."""
    log_levels: dict[str, dict[str, object]] = field(default_factory=dict)
    """Storm's ``namedLoggerLevels``: the loggers set for a while, and until when."""
    worker_logs: dict[int, list[tuple[float, str]]] = field(default_factory=dict)
    """The continuous workers' latest Python log records (when they came, the line)."""
    profiles: dict[str, tuple[float, str]] = field(default_factory=dict)
    """The latest CPU profiles asked for, by worker (``driver`` or a number): when, text."""
    debug_events: list[tuple[float, str]] = field(default_factory=list)
    """The latest debug lines, with when the driver got them."""
    taken: float = field(default_factory=time.time)


@dataclass
class Control:
    """What the driver shares with the server thread."""

    name: str
    engine: str
    token: str
    loopback: bool
    mode: str = "local"
    """``local``, ``superstep`` or ``continuous``: which figures and labels apply."""
    master: str | None = None
    spark_ui: str | None = None
    started: float = field(default_factory=time.time)
    snapshot: Snapshot = field(default_factory=Snapshot)
    commands: queue.Queue[Command] = field(default_factory=queue.Queue)
    kill_wait: float | None = None
    """Set when a kill arrived: the longest the drain may then last."""
    graph: dict[str, Any] = field(default_factory=dict)
    """The topology's components and subscriptions (see :func:`topology_graph`)."""
    configuration: dict[str, Any] = field(default_factory=dict)
    """The topology's resolved configuration, passwords masked."""
    drpc: DRPCServer | None = None
    """The run's DRPC server, for a topology's functions given none of their own."""
    drpc_timeout: float = 60.0
    """How long a DRPC call through the API waits for its answer."""
    history: History = field(init=False)

    def __post_init__(self) -> None:
        self.history = History(self.started)


def topology_graph(plan: Plan) -> dict[str, Any]:
    """Components (id, kind, tasks) and edges (from, to, stream, grouping): the DAG to draw."""
    topology = plan.topology
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
        }
        for bolt in topology.bolts
        for source, grouping in bolt.inputs
    ]
    return {"components": components, "edges": edges}


def shown_configuration(conf: dict[str, Any]) -> dict[str, Any]:
    """``conf`` as the API shows it: secrets masked.

    URLs lose their password; the UI's token, and the key and box of the DRPC server and
    of the run's memory (whoever has them can put requests to the run, or write its
    state), are masked.
    """

    def shown(key: str, value: Any) -> Any:
        if key == SPARKSTORM_UI_TOKEN and value:
            return "***"
        if key in (SPARKSTORM_DRPC_SERVER, SPARKSTORM_RUN_MEMORY) and value:
            return f"{str(value).rpartition('/')[0].partition('?')[0]}/***"
        if isinstance(value, str) and "://" in value:
            return redacted(value)
        if isinstance(value, dict):
            return {k: shown(str(k), v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [shown(key, v) for v in value]
        return value if isinstance(value, str | int | float | bool | type(None)) else repr(value)

    return {key: shown(key, value) for key, value in sorted(conf.items())}


def _uptime(secs: float) -> str:
    secs = int(secs)
    days, secs = divmod(secs, 86400)
    hours, secs = divmod(secs, 3600)
    minutes, secs = divmod(secs, 60)
    return (f"{days}d " if days else "") + f"{hours}h {minutes}m {secs}s"


def _summary(control: Control) -> dict[str, Any]:
    """Storm UI's topology summary: status, uptime, workers, executors, memory, version."""
    snap = control.snapshot
    up = time.time() - control.started
    tasks = sum(row.get("tasks", 0) for row in snap.stats.values())
    return {
        "id": control.name,
        "name": control.name,
        "status": snap.status,
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


def _component(
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


def _as_json(value: Any) -> Any:
    """``value`` as JSON carries it: what JSON has no type for, as its ``str``."""
    return json.loads(json.dumps(value, default=str))


def trident_batches(stats: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """A Trident topology's batches: its coordinator's latest metric ``trident``."""
    for row in stats.values():
        if TRIDENT_METRIC in row.get("metrics", {}):
            return _as_json(row["metrics"][TRIDENT_METRIC])  # type: ignore[no-any-return]
    return None


def _output_stats(row: dict[str, Any]) -> list[dict[str, Any]]:
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


def _input_stats(row: dict[str, Any]) -> list[dict[str, Any]]:
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


def _task(row: dict[str, Any], where: dict[int, Any]) -> dict[str, Any]:
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


def _topology_stats(control: Control, system: bool) -> list[dict[str, Any]]:
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


def _component_windows(control: Control, component: str, spout: bool) -> list[dict[str, Any]]:
    """Storm UI's spout or bolt stats of one component: a row per window."""
    keys: tuple[str, ...] = ("emitted", "transferred", "acked", "failed")
    keys += ("completeLatency",) if spout else ("executed", "executeLatency", "processLatency")
    rows = []
    for name, figures in _by_window(control):
        mine = figures.get(component, {})
        row = {key: mine.get(key, 0) for key in keys}
        rows.append({"window": name, "windowPretty": WINDOW_NAMES[name], **row})
    return rows


def _debug_of(shares: Any) -> dict[str, Any]:
    """Storm UI's ``debug`` and ``samplingPct``: on where any share is, at the largest."""
    largest = max(shares, default=0.0)
    return {"debug": largest > 0, "samplingPct": round(100 * largest, 3)}


def _events_of(snap: Snapshot, component: str) -> list[dict[str, Any]]:
    """The latest debug lines about ``component``: its emits, and its tasks' acks and fails."""
    marks = [f" {component} "] + [f"TASK: {t['task']} " for t in snap.tasks.get(component, [])]
    mine = [(at, line) for at, line in snap.debug_events if any(m in line for m in marks)]
    return [{"at": round(at, 3), "line": line} for at, line in mine[-DEBUG_EVENTS:]]


def _continuous_workers(control: Control) -> dict[str, dict[str, Any]]:
    """The continuous mode's workers by number: the processes the driver can ask things.

    The superstep mode's Python workers are Spark's, which the driver cannot reach.
    """
    if control.mode != "continuous":
        return {}
    return {str(w["worker"]): w for w in control.snapshot.workers}


def is_system(component: str) -> bool:
    """Storm's system components (``__acker``, ``__system``), hidden unless asked for."""
    return component.startswith("__")


def _placement(control: Control) -> dict[int, tuple[int | None, str | None, float | None]]:
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


def _shown_error(control: Control, error: Any, where: dict[int, Any]) -> dict[str, Any]:
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


def _number(raw: str) -> float:
    """A path's or query's number, or -1 when it is none (every caller refuses < 0)."""
    try:
        return float(raw)
    except ValueError:
        return -1.0


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


STATIC = Path(__file__).with_name("static")
HOST = socket.gethostname()
LATEST_ERRORS = 50
"""The latest errors a topology's or a component's answer lists (all are counted)."""


class _Handlers:
    """The API's request handlers over one running topology (Storm UI's routes)."""

    def __init__(self, control: Control) -> None:
        self.control = control

    def known(self, request: Request) -> JSONResponse | None:
        name = request.path_params["name"]
        if name != self.control.name:
            return _error(404, f"no topology {name!r} here; this driver runs {self.control.name!r}")
        return None

    def allowed(self, request: Request) -> JSONResponse | None:
        if self.control.loopback:
            return None
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), self.control.token.encode()):
            return _error(
                401,
                "this control route needs 'Authorization: Bearer TOKEN': the token was "
                "printed when the run started, and is in the run's file on the driver's "
                f"machine ({registry.run_dir() / self.control.name}.json)",
            )
        return None

    def window_of(self, request: Request) -> tuple[str, float | None] | JSONResponse:
        """Storm UI's ``?window=``: 600, 10800, 86400 seconds or ``:all-time`` (the default).

        The error to answer instead, for a topology not here or a window not known.
        """
        if (problem := self.known(request)) is not None:
            return problem
        given = request.query_params.get("window", ":all-time")
        if given not in WINDOWS:
            return _error(400, f"window={given}: use one of {', '.join(WINDOWS)}")
        return given, WINDOWS[given]

    async def summary(self, request: Request) -> JSONResponse:
        return JSONResponse({"topologies": [_summary(self.control)]})

    async def topology(self, request: Request) -> JSONResponse:
        if isinstance(window := self.window_of(request), JSONResponse):
            return window
        name, secs = window
        system = request.query_params.get("sys", "false") == "true"
        stats = self.control.snapshot.stats
        figures = self.control.history.window(secs) if secs is not None else {}
        rows = [
            _component(self.control, c, row, figures.get(c))
            for c, row in stats.items()
            if system or not is_system(c)
        ]
        where = _placement(self.control)
        errors = [_shown_error(self.control, e, where) for e in self.control.snapshot.errors]
        return JSONResponse(
            {
                **_summary(self.control),
                "window": name,
                "system": system,
                "topologyStats": _topology_stats(self.control, system),
                "spouts": [r for r in rows if "spoutId" in r],
                "bolts": [r for r in rows if "boltId" in r],
                "errors": errors[-LATEST_ERRORS:],
                **_debug_of(self.control.snapshot.debug_shares.values()),
                "debugEvents": [
                    {"at": round(at, 3), "line": line}
                    for at, line in self.control.snapshot.debug_events[-DEBUG_EVENTS:]
                ],
                "workers": self.control.snapshot.workers,
                "slots": self.control.snapshot.slots,
                "restartCount": self.control.snapshot.restart_count,
                "restarts": self.control.snapshot.restarts,
                "graph": self.control.graph,
                "configuration": self.control.configuration,
            }
        )

    async def component(self, request: Request) -> JSONResponse:
        if isinstance(window := self.window_of(request), JSONResponse):
            return window
        name, secs = window
        cid = request.path_params["component"]
        row = self.control.snapshot.stats.get(cid)
        if row is None:
            names = ", ".join(sorted(self.control.snapshot.stats))
            return _error(404, f"topology {self.control.name!r} has no component {cid!r} ({names})")
        figures = self.control.history.window(secs).get(cid) if secs is not None else None
        where = _placement(self.control)
        errors = [
            _shown_error(self.control, e, where)
            for e in self.control.snapshot.errors
            if e.component == cid
        ]
        return JSONResponse(
            {
                "id": cid,
                "topologyId": self.control.name,
                "componentType": row.get("kind"),
                "window": name,
                **_component(self.control, cid, row, figures),
                "windows": _component_windows(self.control, cid, row.get("kind") == "spout"),
                **_debug_of([self.control.snapshot.debug_shares.get(cid, 0.0)]),
                "debugEvents": _events_of(self.control.snapshot, cid),
                "outputStats": _output_stats(row),
                "inputStats": _input_stats(row),
                "executorStats": [
                    _task(t, where) for t in self.control.snapshot.tasks.get(cid, [])
                ],
                "errorsTotal": sum(e["count"] for e in errors),
                "componentErrors": errors[-LATEST_ERRORS:],
            }
        )

    async def timeseries(self, request: Request) -> JSONResponse:
        if isinstance(window := self.window_of(request), JSONResponse):
            return window
        return JSONResponse(self.control.history.series(window[1] or 86400.0))

    def operation(self, action: str) -> Callable[[Request], Awaitable[JSONResponse]]:
        async def handle(request: Request) -> JSONResponse:
            if (problem := self.known(request) or self.allowed(request)) is not None:
                return problem
            command = Command(action)
            if action in (KILL, REBALANCE):
                raw = request.path_params.get("wait", "")
                wait = _number(raw)
                if not 0 <= wait < 86400:
                    return _error(400, f"{action}/{raw}: the wait must be seconds >= 0")
                command = Command(action, wait)
            if action == REBALANCE:
                workers = await self.workers_asked(request)
                if isinstance(workers, JSONResponse):
                    return workers
                command = Command(action, command.wait, workers)
            self.control.commands.put(command)
            return JSONResponse(
                {"topologyOperation": action, "topologyId": self.control.name, "status": "success"}
            )

        return handle

    async def workers_asked(self, request: Request) -> int | JSONResponse | None:
        """A rebalance's ``rebalanceOptions.numWorkers`` (Storm's body), checked."""
        slots = self.control.snapshot.slots
        if slots is None:
            return _error(
                400,
                f"topology {self.control.name!r} runs on the {self.control.engine} engine's "
                "superstep or local mode, whose tasks are dealt anew every superstep: only "
                "the continuous mode's workers are rebalanced",
            )
        body = await request.body()
        try:
            options = json.loads(body or b"{}").get("rebalanceOptions", {})
            workers = options.get("numWorkers")
        except (ValueError, AttributeError):
            return _error(
                400, 'rebalance: the body must be {"rebalanceOptions": {"numWorkers": N}}'
            )
        if workers is None:
            return None
        if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= slots:
            return _error(
                400,
                f"rebalance: numWorkers is {workers!r}; the cluster has {slots} task slots, "
                f"so ask for 1 to {slots} (one slot per worker)",
            )
        return workers

    async def debug(self, request: Request) -> JSONResponse:
        """Storm UI's Debug: sample a percentage of the components' calls, or stop.

        ``enable`` or ``disable``, for every component or for one
        (``.../component/ID/debug/...``); the lines go to the event log.
        """
        if (problem := self.known(request) or self.allowed(request)) is not None:
            return problem
        action, raw = request.path_params["action"], request.path_params["spct"]
        component = request.path_params.get("component")
        if component is not None and component not in self.control.snapshot.debug_shares:
            names = ", ".join(sorted(self.control.snapshot.debug_shares))
            return _error(404, f"debug: no component {component!r} to debug ({names})")
        if action not in ("enable", "disable"):
            return _error(400, f"debug/{action}: the action is enable or disable")
        percent = _number(raw)
        if not 0 < percent <= 100:
            return _error(400, f"debug/{action}/{raw}: the sampling percentage is in (0, 100]")
        shown = percent if action == "enable" else 0.0
        self.control.commands.put(Command(DEBUG, component=component, percent=shown))
        return JSONResponse(
            {
                "topologyOperation": "debug",
                "topologyId": self.control.name,
                "status": "success",
                "component": component,
                "debug": action == "enable",
                "samplingPct": shown,
            }
        )

    async def logconfig(self, request: Request) -> JSONResponse:
        """Storm UI's "Change log level": loggers at a level for some seconds, then back.

        The body is Storm's: ``{"namedLoggerLevels": {"LOGGER": {"target_level": "DEBUG",
        "timeout": 30}}}`` (``ROOT``: the root logger); the driver and every continuous
        worker take it. GET shows the loggers set now.
        """
        if (problem := self.known(request)) is not None:
            return problem
        if request.method == "POST":
            if (problem := self.allowed(request)) is not None:
                return problem
            try:
                asked = json.loads(await request.body() or b"{}")["namedLoggerLevels"]
                changes = [
                    (str(name), str(v["target_level"]).upper(), float(v.get("timeout", 30)))
                    for name, v in asked.items()
                ]
            except (ValueError, KeyError, TypeError, AttributeError):
                return _error(
                    400,
                    'logconfig: the body is {"namedLoggerLevels": {"LOGGER": '
                    '{"target_level": "DEBUG", "timeout": 30}}}',
                )
            for name, level, secs in changes:
                if level not in LEVELS or not 0 < secs <= 86400:
                    return _error(
                        400,
                        f"logconfig: {name}: the level is one of {', '.join(LEVELS)}, for "
                        "0 to 86,400 seconds",
                    )
            for name, level, secs in changes:
                self.control.commands.put(
                    Command(LOG_LEVEL, wait=secs, component=name, level=level)
                )
            shown = {n: {"target_level": lv, "timeout": s} for n, lv, s in changes}
            return JSONResponse({"namedLoggerLevels": shown})
        return JSONResponse({"namedLoggerLevels": self.control.snapshot.log_levels})

    async def worker_log(self, request: Request) -> JSONResponse:
        """Storm's logviewer, for a continuous worker: its latest Python log records."""
        if (problem := self.known(request)) is not None:
            return problem
        raw, snap = request.path_params["worker"], self.control.snapshot
        workers = {str(w["worker"]): w for w in snap.workers}
        if raw not in workers:
            known = ", ".join(workers) or "none: the local engine's log is the driver's"
            return _error(404, f"workers/{raw}/log: no such worker; the workers are {known}")
        lines = snap.worker_logs.get(int(raw), [])
        return JSONResponse(
            {
                "worker": int(raw),
                "host": workers[raw]["host"],
                "pid": workers[raw]["pid"],
                "lines": [{"at": round(at, 3), "line": line} for at, line in lines],
            }
        )

    async def profile(self, request: Request) -> JSONResponse:
        """Storm's profiler for a Python worker: a CPU profile (cProfile) for ``secs``.

        ``driver`` profiles the driver's loop (the local engine's tasks, the superstep
        mode's spouts); a number, that continuous worker's loop, where its tasks run.
        """
        if (problem := self.known(request) or self.allowed(request)) is not None:
            return problem
        raw, raw_secs = request.path_params["worker"], request.path_params["secs"]
        secs = _number(raw_secs)
        if not 0 < secs <= MAX_PROFILE_SECS:
            return _error(400, f"profiling/cpu/{raw}/{raw_secs}: profile 1 to 300 seconds")
        workers = _continuous_workers(self.control)
        if raw != "driver" and raw not in workers:
            known = ", ".join(["driver", *workers])
            return _error(404, f"profiling/cpu/{raw}: no such worker here; ask for one of: {known}")
        asked = time.time()
        worker = None if raw == "driver" else int(raw)
        self.control.commands.put(Command(PROFILE, wait=secs, workers=worker))
        deadline = time.monotonic() + secs + STACKS_WAIT_SECS
        while time.monotonic() < deadline:
            taken, text = self.control.snapshot.profiles.get(raw, (0.0, ""))
            if taken >= asked:
                row = workers.get(raw, {"host": HOST, "pid": os.getpid()})
                return JSONResponse(
                    {
                        "worker": worker if worker is not None else "driver",
                        "host": row["host"],
                        "pid": row["pid"],
                        "secs": secs,
                        "taken": taken,
                        "profile": text,
                    }
                )
            await asyncio.sleep(0.1)
        return _error(504, f"worker {raw} sent no profile within {secs + STACKS_WAIT_SECS:g}s")

    async def stacks(self, request: Request) -> JSONResponse:
        """Storm's jstack for a Python worker: every thread of its process, with its stack.

        ``driver`` is the driver's process (the local engine's tasks, the superstep mode's
        spouts); a number is a continuous worker, asked through the driver's loop.
        """
        if (problem := self.known(request) or self.allowed(request)) is not None:
            return problem
        raw = request.path_params["worker"]
        if raw == "driver":
            return JSONResponse(
                {
                    "worker": "driver",
                    "host": HOST,
                    "pid": os.getpid(),
                    "taken": time.time(),
                    "stacks": thread_stacks(),
                }
            )
        workers = _continuous_workers(self.control)
        if raw not in workers:
            known = ", ".join(["driver", *workers])
            return _error(404, f"dumpstack/{raw}: no such worker here; ask for one of: {known}")
        worker, asked = int(raw), time.time()
        self.control.commands.put(Command(STACKS, workers=worker))
        deadline = time.monotonic() + STACKS_WAIT_SECS
        while time.monotonic() < deadline:
            taken, text = self.control.snapshot.stacks.get(worker, (0.0, ""))
            if taken >= asked:
                row = workers[raw]
                return JSONResponse(
                    {
                        "worker": worker,
                        "host": row["host"],
                        "pid": row["pid"],
                        "taken": taken,
                        "stacks": text,
                    }
                )
            await asyncio.sleep(0.05)
        return _error(504, f"worker {worker} sent no stack dump within {STACKS_WAIT_SECS:g}s")

    async def drpc(self, request: Request) -> Response:
        """Storm's DRPC over HTTP: the body is the arguments; the answer, the result's JSON."""
        if (problem := self.known(request) or self.allowed(request)) is not None:
            return problem
        function, server = request.path_params["function"], self.control.drpc
        if server is None or function not in server.functions:
            served = ", ".join(sorted(server.functions)) if server is not None else "none"
            return _error(
                404,
                f"topology {self.control.name!r} serves no DRPC function {function!r} "
                f"(it serves: {served}; a Trident stream new_drpc_stream(FUNCTION) with no "
                "LocalDRPC is served here)",
            )
        try:
            args = (await request.body()).decode()
        except UnicodeDecodeError:
            return _error(400, f"drpc/{function}: the body (the arguments) must be UTF-8 text")
        raw = request.query_params.get("timeout", str(self.control.drpc_timeout))
        timeout = _number(raw)
        if not 0 < timeout <= 86400:
            return _error(400, f"drpc/{function}?timeout={raw}: the timeout must be seconds > 0")
        try:
            answer = await run_in_threadpool(server.execute, function, args, timeout)
        except DRPCExecutionError as exc:
            return _error(500, str(exc))
        except TimeoutError as exc:
            return _error(504, f"{exc} (sparkstorm.drpc.request.timeout.secs)")
        return Response(answer, media_type="application/json")

    async def page(self, request: Request) -> FileResponse:
        return FileResponse(STATIC / "topology.html")


def build_app(control: Control) -> Starlette:
    """The Starlette application serving ``control``: the API and the page."""
    h = _Handlers(control)
    base = "/api/v1/topology"
    return Starlette(
        routes=[
            Route(f"{base}/summary", h.summary),
            Route(base + "/{name}", h.topology),
            Route(base + "/{name}/component/{component}", h.component),
            Route(base + "/{name}/timeseries", h.timeseries),
            Route(base + "/{name}/activate", h.operation(ACTIVATE), methods=["POST"]),
            Route(base + "/{name}/deactivate", h.operation(DEACTIVATE), methods=["POST"]),
            Route(base + "/{name}/kill/{wait}", h.operation(KILL), methods=["POST"]),
            Route(base + "/{name}/rebalance/{wait}", h.operation(REBALANCE), methods=["POST"]),
            Route(base + "/{name}/drpc/{function}", h.drpc, methods=["POST"]),
            Route(base + "/{name}/profiling/dumpstack/{worker}", h.stacks, methods=["POST"]),
            Route(base + "/{name}/profiling/cpu/{worker}/{secs}", h.profile, methods=["POST"]),
            Route(base + "/{name}/logconfig", h.logconfig, methods=["GET", "POST"]),
            Route(base + "/{name}/workers/{worker}/log", h.worker_log),
            Route(base + "/{name}/debug/{action}/{spct}", h.debug, methods=["POST"]),
            Route(
                base + "/{name}/component/{component}/debug/{action}/{spct}",
                h.debug,
                methods=["POST"],
            ),
            Route("/", h.page),
            Route("/component/{component}", h.page),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        exception_handlers={404: _no_route, 405: _no_route},
    )


async def _no_route(request: Request, exc: Exception) -> JSONResponse:
    """The documented JSON error for a route that is not there (or not for this method)."""
    status = getattr(exc, "status_code", 404)
    what = "no route" if status == 404 else f"no {request.method} on"
    return _error(
        status, f"{what} {request.url.path}; the API's routes are under /api/v1/topology/"
    )
