"""The REST API of a running topology, shaped after Storm UI's ``/api/v1``.

The driver loop owns the runtime; the server thread never touches it. The loop
publishes a :class:`Snapshot` now and then, which the API serves, and takes the
commands the API puts on ``Control.commands`` between supersteps.

Read-only routes are open. The control routes (activate, deactivate, rebalance, kill)
and DRPC calls need the token (header ``Authorization: Bearer TOKEN``) off loopback, or
whenever the user gave one. Before any route, ``api_guard`` refuses what a web page
could send or read (another ``Host``, another ``Origin``, a form's body), large bodies,
and framing (docs/security.md).
The web page (``/``, ``/component/ID``) is static HTML and JavaScript that reads this
API, so the page shows what the API shows.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from prometheus_client.exposition import choose_encoder
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sparkstorm.control.api_guard import NEEDS_TOKEN, bearer_matches
from sparkstorm.control.api_model import (
    ACTIVATE,
    DEACTIVATE,
    DEBUG,
    DEBUG_EVENTS,
    KILL,
    LOG_LEVEL,
    MAX_PROFILE_SECS,
    PROFILE,
    REBALANCE,
    STACKS,
    STACKS_WAIT_SECS,
    Command,
    Control,
)
from sparkstorm.control.api_views import (
    HOST,
    component_json,
    component_windows,
    continuous_workers,
    debug_of,
    events_of,
    input_stats,
    is_system,
    output_stats,
    placement,
    shown_error,
    summary_json,
    task_json,
    topology_stats,
)
from sparkstorm.control.history import WINDOWS
from sparkstorm.control.prometheus import registry_of
from sparkstorm.errors import DRPCExecutionError
from sparkstorm.tasks.log_levels import LEVELS
from sparkstorm.tasks.stacks import thread_stacks


def _number(raw: str) -> float:
    """A path's or query's number, or -1 when it is none (every caller refuses < 0)."""
    try:
        return float(raw)
    except ValueError:
        return -1.0


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


STATIC = Path(__file__).with_name("static")
MAX_DRPC_WAITING = 1000
"""DRPC calls through the API that may wait for their answers at once; more get 503."""
LATEST_ERRORS = 50
"""The latest errors a topology's or a component's answer lists (all are counted)."""


class _Handlers:
    """The API's request handlers over one running topology (Storm UI's routes)."""

    def __init__(self, control: Control) -> None:
        self.control = control
        self.registry = registry_of(control)

    async def metrics(self, request: Request) -> Response:
        """Prometheus' scrape: every figure of the run, in the format its Accept asks."""
        encode, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(encode(self.registry), headers={"Content-Type": content_type})

    async def health(self, request: Request) -> JSONResponse:
        """For a supervisor: 200 while the run goes on and its driver publishes, else 503."""
        snap = self.control.snapshot
        age = time.time() - snap.taken
        healthy = snap.status in RUNNING and age < HEALTH_STALE_SECS
        body = {
            "name": self.control.name,
            "status": snap.status,
            "healthy": healthy,
            "snapshotAgeSecs": round(age, 1),
        }
        if snap.ended:
            body["ended"] = snap.ended
        return JSONResponse(body, status_code=200 if healthy else 503)

    def known(self, request: Request) -> JSONResponse | None:
        name = request.path_params["name"]
        if name != self.control.name:
            return _error(404, f"no topology {name!r} here; this driver runs {self.control.name!r}")
        return None

    def allowed(self, request: Request) -> JSONResponse | None:
        if self.control.loopback:
            return None
        if not bearer_matches(dict(request.headers), self.control.token):
            return _error(401, NEEDS_TOKEN)
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
        if "sec-fetch-mode" in request.headers:  # a browser's fetch: a page is watching
            self.control.last_read = time.monotonic()
        return JSONResponse({"topologies": [summary_json(self.control)]})

    async def topology(self, request: Request) -> JSONResponse:
        if isinstance(window := self.window_of(request), JSONResponse):
            return window
        self.control.last_figures_read = time.monotonic()
        name, secs = window
        system = request.query_params.get("sys", "false") == "true"
        stats = self.control.snapshot.stats
        figures = self.control.history.window(secs) if secs is not None else {}
        rows = [
            component_json(self.control, c, row, figures.get(c))
            for c, row in stats.items()
            if system or not is_system(c)
        ]
        where = placement(self.control)
        errors = [shown_error(self.control, e, where) for e in self.control.snapshot.errors]
        return JSONResponse(
            {
                **summary_json(self.control),
                "window": name,
                "system": system,
                "topologyStats": topology_stats(self.control, system),
                "spouts": [r for r in rows if "spoutId" in r],
                "bolts": [r for r in rows if "boltId" in r],
                "errors": errors[-LATEST_ERRORS:],
                **debug_of(self.control.snapshot.debug_shares.values()),
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
        self.control.last_figures_read = time.monotonic()
        name, secs = window
        cid = request.path_params["component"]
        row = self.control.snapshot.stats.get(cid)
        if row is None:
            names = ", ".join(sorted(self.control.snapshot.stats))
            return _error(404, f"topology {self.control.name!r} has no component {cid!r} ({names})")
        figures = self.control.history.window(secs).get(cid) if secs is not None else None
        where = placement(self.control)
        errors = [
            shown_error(self.control, e, where)
            for e in self.control.snapshot.errors
            if e.component == cid
        ]
        return JSONResponse(
            {
                "id": cid,
                "topologyId": self.control.name,
                "componentType": row.get("kind"),
                "window": name,
                **component_json(self.control, cid, row, figures),
                "windows": component_windows(self.control, cid, row.get("kind") == "spout"),
                **debug_of([self.control.snapshot.debug_shares.get(cid, 0.0)]),
                "debugEvents": events_of(self.control.snapshot, cid),
                "outputStats": output_stats(row),
                "inputStats": input_stats(row),
                "executorStats": [
                    task_json(t, where) for t in self.control.snapshot.tasks.get(cid, [])
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
                asked = await self.rebalance_asked(request)
                if isinstance(asked, JSONResponse):
                    return asked
                command = Command(action, command.wait, asked[0], executors=asked[1])
                self.control.rebalancing += 1  # said at once: list shows it from now
                self.control.snapshot = replace(self.control.snapshot, status="REBALANCING")
            self.control.commands.put(command)
            return JSONResponse(
                {"topologyOperation": action, "topologyId": self.control.name, "status": "success"}
            )

        return handle

    async def rebalance_asked(
        self, request: Request
    ) -> tuple[int | None, dict[str, int] | None] | JSONResponse:
        """A rebalance's ``rebalanceOptions`` (Storm's body), read once and checked.

        ``numWorkers`` and ``executors`` (None where not given), or the error to answer.
        """
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
        if workers is not None and (
            not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= slots
        ):
            return _error(
                400,
                f"rebalance: numWorkers is {workers!r}; the cluster has {slots} task slots, "
                f"so ask for 1 to {slots} (one slot per worker)",
            )
        executors = self.executors_asked(options.get("executors"), workers)
        if isinstance(executors, JSONResponse):
            return executors
        return workers, executors

    def executors_asked(
        self, asked: Any, workers: int | None
    ) -> dict[str, int] | JSONResponse | None:
        """A rebalance's ``executors`` (Storm's ``{"split": 2}``), checked.

        Each component's executors are the workers its tasks are kept in: 1 to its task
        count, and no more than the workers the rebalance places the tasks over.
        """
        if asked is None:
            return None
        stats = self.control.snapshot.stats
        total = workers or len(self.control.snapshot.workers) or 1
        if not isinstance(asked, dict):
            return _error(400, 'rebalance: executors must be {"component": N, ...}')
        executors = {}
        for component, raw in asked.items():
            if component not in stats or component.startswith("__"):
                names = ", ".join(sorted(c for c in stats if not c.startswith("__")))
                return _error(400, f"rebalance: no component {component!r} ({names})")
            tasks = stats[component].get("tasks", 1)
            count = _number(str(raw))
            if count != int(count) or not 1 <= count <= min(tasks, total):
                return _error(
                    400,
                    f"rebalance: {component}={raw}: its executors are the workers its "
                    f"{tasks} tasks are kept in, so give 1 to {min(tasks, total)} (its tasks "
                    f"and the {total} workers bound it)",
                )
            executors[component] = int(count)
        return executors

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
        workers = continuous_workers(self.control)
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
        workers = continuous_workers(self.control)
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
        status = self.control.snapshot.status
        if status == "INACTIVE":  # its spouts, the coordinator included, take nothing
            return _error(
                409,
                f"drpc/{function}: topology {self.control.name!r} is INACTIVE: its "
                "coordinator takes no request until it is activated (sparkstorm activate "
                f"{self.control.name})",
            )
        if server.waiting >= MAX_DRPC_WAITING:
            return _error(
                503,
                f"drpc/{function}: {MAX_DRPC_WAITING} DRPC calls already wait for this "
                "topology; try again once they are answered",
            )
        try:  # waits without a thread: DRPC calls never starve the page's requests
            answer = await server.answer(function, args, timeout)
        except DRPCExecutionError as exc:
            return _error(500, str(exc))
        except TimeoutError as exc:
            given = "timeout" in request.query_params
            how = "the timeout the call gave" if given else "sparkstorm.drpc.request.timeout.secs"
            return _error(504, f"{exc} ({how})")
        return Response(answer, media_type="application/json")

    async def page(self, request: Request) -> FileResponse:
        return FileResponse(STATIC / "topology.html")


RUNNING = ("STARTING", "ACTIVE", "INACTIVE", "REBALANCING")
"""The statuses of a run that goes on: /health answers 200 (KILLED or HALTED: 503)."""
HEALTH_STALE_SECS = 10.0
"""A driver that published nothing for this long (it does every 0.5 s) is not healthy."""


def build_app(control: Control) -> Starlette:
    """The Starlette application serving ``control``: the API and the page."""
    h = _Handlers(control)
    base = "/api/v1/topology"
    return Starlette(
        routes=[
            Route(f"{base}/summary", h.summary),
            Route("/metrics", h.metrics),
            Route("/health", h.health),
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
