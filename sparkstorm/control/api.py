"""The REST API of a running topology, shaped after Storm UI's ``/api/v1``.

The driver loop owns the runtime; the server thread never touches it. The loop
publishes a :class:`Snapshot` now and then, which the API serves, and takes the
commands the API puts on ``Control.commands`` between supersteps.

Read-only routes are open. The control routes (activate, deactivate, kill) need the
token (header ``Authorization: Bearer TOKEN``) unless the server listens on loopback.
"""

from __future__ import annotations

import hmac
import queue
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

ACTIVATE, DEACTIVATE, KILL = "activate", "deactivate", "kill"


@dataclass
class Snapshot:
    """What the API shows: the runtime's statistics and errors as of ``taken``."""

    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[Any] = field(default_factory=list)
    status: str = "STARTING"
    supersteps: int = 0
    in_flight: int = 0
    taken: float = field(default_factory=time.time)


@dataclass
class Control:
    """What the driver shares with the server thread."""

    name: str
    engine: str
    token: str
    loopback: bool
    master: str | None = None
    spark_ui: str | None = None
    started: float = field(default_factory=time.time)
    snapshot: Snapshot = field(default_factory=Snapshot)
    commands: queue.Queue[tuple[str, float | None]] = field(default_factory=queue.Queue)
    kill_wait: float | None = None
    """Set when a kill arrived: the longest the drain may then last."""


def _uptime(secs: float) -> str:
    secs = int(secs)
    days, secs = divmod(secs, 86400)
    hours, secs = divmod(secs, 3600)
    minutes, secs = divmod(secs, 60)
    return (f"{days}d " if days else "") + f"{hours}h {minutes}m {secs}s"


def _summary(control: Control) -> dict[str, Any]:
    snap = control.snapshot
    up = time.time() - control.started
    return {
        "id": control.name,
        "name": control.name,
        "status": snap.status,
        "engine": control.engine,
        "master": control.master,
        "sparkUi": control.spark_ui,
        "uptime": _uptime(up),
        "uptimeSeconds": round(up, 1),
        "supersteps": snap.supersteps,
        "inFlight": snap.in_flight,
        "tasksTotal": sum(row.get("tasks", 0) for row in snap.stats.values()),
    }


def _last_error(control: Control, component: str) -> str:
    mine = [e for e in control.snapshot.errors if e.component == component]
    return mine[-1].message.splitlines()[0] if mine else ""


def _component(control: Control, component: str, row: dict[str, Any]) -> dict[str, Any]:
    """One row of Storm UI's spouts or bolts table."""
    common = {
        "tasks": row.get("tasks", 0),
        "emitted": row.get("emitted", 0),
        "transferred": row.get("transferred", 0),
        "acked": row.get("acked", 0),
        "failed": row.get("failed", 0),
        "lastError": _last_error(control, component),
    }
    if row.get("kind") == "spout":
        return {
            "spoutId": component,
            **common,
            "pending": row.get("pending", 0),
            "completeLatency": round(row.get("complete_latency_ms", 0.0), 3),
            "completeLatencyP50": round(row.get("complete_latency_p50_ms", 0.0), 3),
            "completeLatencyP99": round(row.get("complete_latency_p99_ms", 0.0), 3),
            "failReasons": row.get("fail_reasons", {}),
            "spoutBatch": row.get("spout_batch"),
        }
    return {
        "boltId": component,
        **common,
        "executed": row.get("executed", 0),
        "executeLatency": round(row.get("execute_latency_ms", 0.0), 3),
        "processLatency": round(row.get("process_latency_ms", 0.0), 3),
        "capacity": row.get("capacity", 0.0),
        "prepares": row.get("prepares", 0),
    }


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def build_app(control: Control) -> Starlette:
    """The Starlette application serving ``control``."""

    def known(request: Request) -> JSONResponse | None:
        name = request.path_params["name"]
        if name != control.name:
            return _error(404, f"no topology {name!r} here; this driver runs {control.name!r}")
        return None

    def allowed(request: Request) -> JSONResponse | None:
        if control.loopback:
            return None
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), control.token.encode()):
            return _error(401, "this control route needs 'Authorization: Bearer TOKEN'")
        return None

    async def summary(request: Request) -> JSONResponse:
        return JSONResponse({"topologies": [_summary(control)]})

    async def topology(request: Request) -> JSONResponse:
        if (problem := known(request)) is not None:
            return problem
        stats = control.snapshot.stats
        rows = [_component(control, c, row) for c, row in stats.items()]
        return JSONResponse(
            {
                **_summary(control),
                "spouts": [r for r in rows if "spoutId" in r],
                "bolts": [r for r in rows if "boltId" in r],
            }
        )

    async def component(request: Request) -> JSONResponse:
        if (problem := known(request)) is not None:
            return problem
        cid = request.path_params["component"]
        row = control.snapshot.stats.get(cid)
        if row is None:
            names = ", ".join(sorted(control.snapshot.stats))
            return _error(404, f"topology {control.name!r} has no component {cid!r} ({names})")
        errors = [
            {
                "time": e.time,
                "task": e.task,
                "count": e.count,
                "error": e.message,
            }
            for e in control.snapshot.errors
            if e.component == cid
        ]
        return JSONResponse(
            {
                "id": cid,
                "topologyId": control.name,
                "componentType": row.get("kind"),
                **_component(control, cid, row),
                "componentErrors": errors[-50:],
            }
        )

    def operation(action: str) -> Callable[[Request], Awaitable[JSONResponse]]:
        async def handle(request: Request) -> JSONResponse:
            if (problem := known(request) or allowed(request)) is not None:
                return problem
            wait = None
            if action == KILL:
                raw = request.path_params.get("wait", "")
                try:
                    wait = float(raw)
                except ValueError:
                    wait = -1.0
                if not 0 <= wait < 86400:
                    return _error(400, f"kill/{raw}: the wait must be seconds >= 0")
            control.commands.put((action, wait))
            return JSONResponse(
                {"topologyOperation": action, "topologyId": control.name, "status": "success"}
            )

        return handle

    base = "/api/v1/topology"
    return Starlette(
        routes=[
            Route(f"{base}/summary", summary),
            Route(base + "/{name}", topology),
            Route(base + "/{name}/component/{component}", component),
            Route(base + "/{name}/activate", operation(ACTIVATE), methods=["POST"]),
            Route(base + "/{name}/deactivate", operation(DEACTIVATE), methods=["POST"]),
            Route(base + "/{name}/kill/{wait}", operation(KILL), methods=["POST"]),
        ]
    )
