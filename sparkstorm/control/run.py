"""``sparkstorm.run``: run one topology on the wall clock until idle, a duration, or Ctrl-C."""

from __future__ import annotations

import gc
import logging
import math
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any

from sparkstorm.config import (
    SPARKSTORM_DRPC_REQUEST_TIMEOUT_SECS,
    SPARKSTORM_DRPC_SERVER,
    SPARKSTORM_IDLE_GRACE_SECS,
    SPARKSTORM_RUN_MEMORY,
    SPARKSTORM_SPARK_MODE,
    SPARKSTORM_SPARK_PARTITIONS,
    SPARKSTORM_SUPERSTEP_TARGET_SECS,
    SPARKSTORM_UI_HOST,
    SPARKSTORM_UI_HOSTS,
    SPARKSTORM_UI_PORT,
    SPARKSTORM_WATCHDOG_SECS,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    resolve,
)
from sparkstorm.control.clock import WallClock
from sparkstorm.control.continuous import DRAIN_SECS, ContinuousRuntime
from sparkstorm.control.drpc import DRPCServer, drpc_functions
from sparkstorm.control.run_memory import RunMemory, needs_memory
from sparkstorm.control.superstep import TopologyRuntime
from sparkstorm.control.ui_token import GIVEN_TOKEN, token_given, ui_token
from sparkstorm.engines import driver_address, make_continuous_engine, make_engine
from sparkstorm.errors import RunAborted
from sparkstorm.reliability.base_collector import ReportedError
from sparkstorm.tasks.cpu_profile import CpuProfile
from sparkstorm.tasks.process_usage import usage
from sparkstorm.tasks.watchdog import Watchdog
from sparkstorm.topology.builder import Topology
from sparkstorm.topology.streams import SYSTEM_COMPONENT_ID, SYSTEM_TASK_ID

log = logging.getLogger(__name__)

Runtime = TopologyRuntime | ContinuousRuntime
"""What runs a topology for the run loop: supersteps, or the continuous mode's control."""

if TYPE_CHECKING:
    from sparkstorm.control.api_model import Control
    from sparkstorm.control.server import ControlServer


@dataclass
class RunResult:
    """What a finished run leaves: statistics, errors, captured values, timings.

    .. versionadded:: 0.1.0
    """

    name: str
    engine: str
    stats: dict[str, dict[str, Any]]
    errors: list[ReportedError]
    captured: dict[tuple[str, str], list[list[Any]]] = field(default_factory=dict)
    elapsed_secs: float = 0.0
    """Wall seconds from the engine being up to the stop; a run that ended idle counts
    up to when it went quiet, not the ``sparkstorm.idle.grace.secs`` spent confirming."""
    startup_secs: float = 0.0
    supersteps: int = 0
    """Supersteps that gave the engine something to do."""
    interrupted: bool = False
    profile: dict[str, float] = field(default_factory=dict)
    """Seconds spent per phase: spout loop, Spark job, decoding, bolt code... (see
    :data:`sparkstorm.tasks.profile.PHASES`)."""
    errors_dropped: int = 0
    """Errors let go to keep the first and the latest (see ``control/kept_errors``).

    .. versionadded:: 0.2.0
    """
    captured_dropped: dict[tuple[str, str], int] = field(default_factory=dict)
    """Per (component, stream), how many of the oldest captured values were dropped to
    keep the latest ``sparkstorm.capture.max.values``.

    .. versionadded:: 0.2.0
    """


def run(
    topology: Topology,
    conf: dict[str, Any] | None = None,
    engine: str = "spark",
    spark: Any = None,
    *,
    master: str | None = None,
    duration: float | None = None,
    until_idle: bool | None = None,
    name: str = "topology",
    on_progress: Callable[[Runtime], None] | None = None,
    progress_secs: float = 1.0,
    on_start: Callable[[Runtime], None] | None = None,
    on_stopping: Callable[[Runtime, float], None] | None = None,
    spark_ui: bool = True,
    api: bool = False,
) -> RunResult:
    """Run ``topology`` on ``engine`` and return its statistics when it stops.

    It stops when it is idle (``until_idle``, the default without ``duration``: nothing
    in flight, every tracked message has had its outcome, and the spouts emitted nothing
    for ``sparkstorm.idle.grace.secs``, so a spout between two broker deliveries is not
    idle), after ``duration`` seconds of topology time, or on Ctrl-C or SIGTERM. A stop
    is graceful: spouts stop being asked for tuples; bolts keep getting their tuples and
    ticks until every pending tree completes or the message timeout passes; what is
    still pending then fails back to its spout with reason ``shutdown``; spouts are
    closed. A second Ctrl-C or SIGTERM raises :class:`RunAborted` at once. Signals are
    handled when called from the main thread. Topology time, and ``duration``, start
    once the engine runs (``RunResult.startup_secs`` is the start-up); ``on_start`` is
    called then (the Spark UI's address is ``runtime.engine.ui_url``). ``on_stopping``
    is called with the runtime and the longest the drain may take when a signal starts
    a graceful stop. ``spark_ui=False`` turns the UI off for a session created here.
    ``api=True`` serves the topology's REST API (``sparkstorm.ui.host``/``.port``; its
    address is ``runtime.api_url`` in ``on_start``) and registers the run, by ``name``,
    for ``sparkstorm list``/``kill``/``activate``/``deactivate``; a kill through it is a
    graceful stop whose drain lasts at most its wait.

    .. versionadded:: 0.1.0
    """
    if until_idle is None:
        until_idle = duration is None
    started = time.monotonic()
    memory = None
    if needs_memory(topology):  # served on the driver's address: only when something uses it
        memory = RunMemory(driver_address(engine, conf or {}, spark, master))
        conf = {**(conf or {}), SPARKSTORM_RUN_MEMORY: memory.url}
    plan: list[weakref.ref[Any]] = []  # the run's plan, weakly: whether a cycle kept it
    try:
        return _run(
            topology,
            conf,
            engine,
            spark,
            started,
            master=master,
            duration=duration,
            until_idle=until_idle,
            name=name,
            on_progress=on_progress,
            progress_secs=progress_secs,
            on_start=on_start,
            on_stopping=on_stopping,
            spark_ui=spark_ui,
            api=api,
            plan=plan,
        )
    finally:
        if memory is not None:
            memory.close()
        # Where the run's objects refer to each other (a task and its collector), its
        # plan, and with it the topology's components (a spout's data, the plan pickled
        # for the workers), would wait for the cyclic collector through several more
        # runs in this process: collect them now. A run that left no such cycle (the
        # continuous mode) has freed them already, and skips the 50 ms of a collection.
        if not plan or plan[0]() is not None:  # no plan: the start failed, collect anyway
            gc.collect()


def _run(
    topology: Topology,
    conf: dict[str, Any] | None,
    engine: str,
    spark: Any,
    started: float,
    *,
    master: str | None,
    duration: float | None,
    until_idle: bool,
    name: str,
    on_progress: Callable[[Runtime], None] | None,
    progress_secs: float,
    on_start: Callable[[Runtime], None] | None,
    on_stopping: Callable[[Runtime, float], None] | None,
    spark_ui: bool,
    api: bool,
    plan: list[weakref.ref[Any]],
) -> RunResult:
    """:func:`run`, with the run's memory made; ``plan`` gets a weak reference to its plan."""
    drpc = _drpc_server(topology, engine, conf or {}, spark, master) if api else None
    if drpc is not None:  # before the tasks open: they reach it at this address
        conf = {**(conf or {}), SPARKSTORM_DRPC_SERVER: drpc.url}
    try:
        runtime = _runtime(
            topology, conf, engine, spark, master=master, name=name, spark_ui=spark_ui
        )
    except BaseException:
        if drpc is not None:
            drpc.close()
        raise
    plan.append(weakref.ref(runtime.plan))
    startup = time.monotonic() - started
    drain = runtime.conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS]
    stop = _Stop()
    server = _serve(runtime, name, engine, master, drpc) if api else None
    if on_start is not None:
        on_start(runtime)
    watchdog = Watchdog(runtime.calling, runtime.conf[SPARKSTORM_WATCHDOG_SECS])
    previous = _install_stop_handlers(stop, lambda: watchdog.blocked or runtime.engine.blocked)
    # the spouts are asked for tuples only now: a Ctrl-C from here on is a graceful stop,
    # never an interruption "during start-up" of a topology that already ran
    runtime.activate()
    confirming = 0.0
    try:
        with watchdog:
            confirming = _loop(
                runtime, stop, until_idle, duration, on_progress, progress_secs, server
            )
    except _Interrupted as exc:  # the first signal came while a user call blocked
        runtime.engine.interrupt()
        message = f"the stop interrupted {exc.call}, which had blocked"
        runtime.errors.append(
            ReportedError(SYSTEM_COMPONENT_ID, SYSTEM_TASK_ID, runtime.now(), message)
        )
    except KeyboardInterrupt:  # a second signal before the loop saw the first
        _restore_handlers(previous)
        raise RunAborted(runtime.pending_count()) from None
    except BaseException as exc:  # a user error: stop what runs, then let it through
        try:
            runtime.kill(drain_secs=drain)
        finally:
            _restore_handlers(previous)
            _close(server, runtime, stop.why, exc)
        raise
    kill_wait = server.control.kill_wait if server is not None else None
    if kill_wait is not None:  # a kill through the API: its wait bounds the drain
        drain = min(drain, kill_wait)
    if stop.is_set() and on_stopping is not None:
        on_stopping(runtime, drain)
    try:
        _drain(runtime, server, drain, stop.why, _throttled(on_progress, runtime, progress_secs))
    finally:
        _restore_handlers(previous)
    return RunResult(
        name,
        engine,
        runtime.stats(),
        runtime.errors,
        runtime.captured.trimmed(),
        time.monotonic() - started - startup - confirming,
        startup,
        runtime.supersteps_run,
        stop.is_set() and kill_wait is None,  # a kill asked for is not an interruption
        dict(runtime.profile),
        runtime.errors.dropped,
        dict(runtime.captured.dropped),
    )


def _loop(
    runtime: Runtime,
    stop: _Stop,
    until_idle: bool,
    duration: float | None,
    on_progress: Callable[[Runtime], None] | None,
    progress_secs: float,
    server: ControlServer | None = None,
) -> float:
    """Run supersteps until a stop: a signal, ``duration``, or idle for the grace period.

    Returns the seconds spent confirming that the topology stayed idle (0 otherwise).
    """
    next_report = time.monotonic() + progress_secs
    grace = runtime.conf[SPARKSTORM_IDLE_GRACE_SECS]
    quiet_since: float | None = None
    asked_since = time.monotonic()  # the spouts have been asked for tuples since then
    next_publish = 0.0
    while not stop.is_set():
        runtime.step()
        if server is not None:
            _obey(server, runtime, stop)
            if time.monotonic() >= next_publish:
                _publish(server, runtime)
                next_publish = time.monotonic() + PUBLISH_SECS
        # a topology deactivated on purpose waits to be activated: it is not finished; nor
        # is one whose spouts a checkpoint's drain holds back (workers just started again)
        if until_idle:
            now = time.monotonic()
            if not runtime.active or runtime.checkpoints.pausing or runtime.holding():
                asked_since, quiet_since = now, None  # the spouts are not being asked
            elif runtime.idle() and not runtime.pending_count():
                quiet_since = now if quiet_since is None else quiet_since
                # the grace runs from when the spouts ran dry, during the last trees too
                dry = runtime.spouts_dry_since()
                if dry == -math.inf:  # every spout is exhausted: nothing more can come
                    stop.why = "finished: every spout exhausted, every message had its outcome"
                    return now - quiet_since
                if now - max(quiet_since if dry is None else dry, asked_since) >= grace:
                    stop.why = f"finished: idle for {grace:g} s, every message had its outcome"
                    return now - quiet_since  # nothing in flight or pending, quiet
            else:
                quiet_since = None
        if duration is not None and runtime.now() >= duration:
            stop.why = f"finished: its duration ({duration:g} s) ran out"
            break
        if runtime.errors.halted is not None:  # a component cannot go on: stop, saying why
            break
        if on_progress is not None and time.monotonic() >= next_report:
            on_progress(runtime)
            next_report = time.monotonic() + progress_secs
        if runtime.idle():
            time.sleep(0.005)  # nothing in flight and nothing to emit: do not spin
    return 0.0


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
PUBLISH_SECS = 0.5
"""How often the driver refreshes what the REST API shows."""


def _runtime(
    topology: Topology,
    conf: dict[str, Any] | None,
    engine: str,
    spark: Any,
    *,
    master: str | None,
    name: str,
    spark_ui: bool,
) -> Runtime:
    """The runtime for ``engine`` and, on Spark, ``sparkstorm.spark.mode``; inactive."""
    resolved = resolve(conf)
    if engine == "spark" and resolved[SPARKSTORM_SPARK_MODE] == "continuous":
        made = make_continuous_engine(resolved, spark=spark, master=master, spark_ui=spark_ui)
        return ContinuousRuntime(name, topology, conf, made, active=False)
    engine_made = make_engine(engine, spark=spark, master=master, spark_ui=spark_ui)
    return TopologyRuntime(name, topology, conf, engine_made, WallClock(), active=False)


def _throttled(
    on_progress: Callable[[Runtime], None] | None, runtime: Runtime, every_secs: float
) -> Callable[[], None] | None:
    """``on_progress(runtime)`` at most every ``every_secs`` (called between drain steps)."""
    if on_progress is None:
        return None
    due = [0.0]

    def progress() -> None:
        if time.monotonic() >= due[0]:
            due[0] = time.monotonic() + every_secs
            on_progress(runtime)

    return progress


def _drain(
    runtime: Runtime,
    server: ControlServer | None,
    drain: float,
    why: str,
    progress: Callable[[], None] | None = None,
) -> None:
    """The graceful stop: pending trees get up to ``drain`` seconds, then the engine stops.

    The API says KILLED (and why) from its start, its figures refreshed as it drains.
    """
    if server is not None:
        _publish(server, runtime, *_ending(runtime, why))
        publish = _throttled(lambda r: _publish(server, r, *_ending(r, why)), runtime, PUBLISH_SECS)
        progress = _both(progress, publish)
    try:
        runtime.kill(sys.maxsize, drain, wait_pending=True, progress=progress)
    except KeyboardInterrupt:  # a second signal during the drain: stop now, say what is left
        raise RunAborted(runtime.pending_count()) from None
    finally:
        _close(server, runtime, why)


def _both(*calls: Callable[[], None] | None) -> Callable[[], None]:
    """One call that makes each of ``calls`` given (between drain steps)."""

    def both() -> None:
        for call in calls:
            if call is not None:
                call()

    return both


def _drpc_server(
    topology: Topology, engine: str, conf: dict[str, Any], spark: Any, master: str | None
) -> DRPCServer | None:
    """The run's DRPC server, for the topology's functions given none of their own.

    Its tasks reach it at the driver's address: loopback, or its address on a cluster.
    """
    functions = drpc_functions(topology)
    if not functions:
        return None
    return DRPCServer(functions, driver_address(engine, conf, spark, master))


def _serve(
    runtime: Runtime, name: str, engine: str, master: str | None, drpc: DRPCServer | None
) -> ControlServer:
    """Start the run's API (the token is made up unless configured) and register it."""
    from sparkstorm.control.api_model import Control
    from sparkstorm.control.api_views import shown_configuration, topology_graph
    from sparkstorm.control.server import ControlServer, is_loopback

    host = runtime.conf[SPARKSTORM_UI_HOST]
    mode = _mode(runtime, engine)
    control = Control(
        name=name,
        engine=engine,
        mode=mode,
        token=ui_token(runtime.conf),
        # a token the user gave is asked for on loopback too: a shared machine's choice
        loopback=is_loopback(host) and not token_given(runtime.conf),
        master=runtime.engine.master or master,
        spark_ui=runtime.engine.ui_url,
        graph=topology_graph(runtime.plan),
        configuration=shown_configuration({**runtime.conf, **_chosen(runtime, mode)}),
        drpc=drpc,
        drpc_timeout=runtime.conf[SPARKSTORM_DRPC_REQUEST_TIMEOUT_SECS],
    )
    server = ControlServer(
        control, host, runtime.conf[SPARKSTORM_UI_PORT], runtime.conf[SPARKSTORM_UI_HOSTS]
    )
    _publish(server, runtime)
    server.start()
    runtime.api_url = server.url
    given = token_given(runtime.conf)  # the user knows it: never printed
    shown = GIVEN_TOKEN if given else None if control.loopback else control.token
    runtime.api_shown = server.shown_url, shown
    return server


def _chosen(runtime: Runtime, mode: str) -> dict[str, str]:
    """The settings left unset that the engine chose a value for, said as chosen."""
    conf, chosen = runtime.conf, {}
    if mode == "superstep" and isinstance(runtime, TopologyRuntime):
        if conf.get(SPARKSTORM_SPARK_PARTITIONS) is None:
            chosen[SPARKSTORM_SPARK_PARTITIONS] = f"{runtime.plan.workers} (the engine's choice)"
        if conf.get(SPARKSTORM_SUPERSTEP_TARGET_SECS) is None:
            secs = runtime.sizer.target_secs
            chosen[SPARKSTORM_SUPERSTEP_TARGET_SECS] = f"{secs:g} (the engine's choice)"
    return chosen


def _mode(runtime: Runtime, engine: str) -> str:
    """Which of the three ways the topology runs: local, superstep or continuous."""
    if isinstance(runtime, ContinuousRuntime):
        return "continuous"
    return "local" if engine == "local" else "superstep"


def _publish(
    server: ControlServer,
    runtime: Runtime,
    status: str | None = None,
    ended: str = "",
    final: bool = False,
) -> None:
    """Hand the API a fresh snapshot; ``status`` defaults to ACTIVE or INACTIVE.

    ``final``: the run's last, once its engine stopped (its figures the final ones).
    """
    from sparkstorm.control.api_model import Snapshot

    stats = runtime.stats()
    control = server.control
    control.history.record(time.time(), stats, runtime.spout_stats())
    control.snapshot = Snapshot(
        stats=stats,
        errors=list(runtime.errors),
        tasks=runtime.task_stats(),
        status=status
        or ("REBALANCING" if control.rebalancing else "ACTIVE" if runtime.active else "INACTIVE"),
        ended=ended,
        final=final,
        supersteps=runtime.supersteps_run,
        in_flight=runtime.in_flight,
        checkpoints=runtime.checkpoints.status(),
        workers=runtime.workers(),
        restarts=[restart.as_json() for restart in runtime.restarts.history],
        slots=runtime.engine.launcher.slots() if isinstance(runtime, ContinuousRuntime) else None,
        restart_count=runtime.restarts.count,
        topology_secs=runtime.now(),
        driver=usage(control.started),
        stacks=dict(runtime.stacks) if isinstance(runtime, ContinuousRuntime) else {},
        debug_shares=dict(runtime.debugging.shares),
        debug_events=list(runtime.debugging.events),
        log_levels=server.log_levels.shown(),
        worker_logs={w: list(lines) for w, lines in runtime.worker_logs.items()},
        profiles={
            **server.profiles,
            **(
                {str(w): p for w, p in runtime.cpu_profiles.items()}
                if isinstance(runtime, ContinuousRuntime)
                else {}
            ),
        },
        errors_let_go=runtime.errors.dropped,
    )


def _obey(server: ControlServer, runtime: Runtime, stop: _Stop) -> None:
    """Apply the commands the API received, between two supersteps."""
    from sparkstorm.control.api_model import (
        ACTIVATE,
        DEACTIVATE,
        DEBUG,
        KILL,
        LOG_LEVEL,
        PROFILE,
        REBALANCE,
        STACKS,
    )

    commands = server.control.commands
    server.log_levels.expire()
    if isinstance(runtime, TopologyRuntime):  # a superstep's Python workers: as of now
        runtime.engine.set_log_levels(server.log_levels.current())
    if server.driver_profile is not None and (text := server.driver_profile.done()) is not None:
        server.driver_profile, server.profiles["driver"] = None, (time.time(), text)
    while not commands.empty():
        action, wait, workers, component, percent, level, executors = commands.get_nowait()
        if action == ACTIVATE:
            runtime.activate()
        elif action == DEACTIVATE:
            runtime.deactivate()
        elif action == KILL:
            server.control.kill_wait = wait
            stop.why = f"killed through its REST API (the page or sparkstorm kill), wait {wait:g} s"
            stop.set()
        elif action == DEBUG:
            runtime.set_debug(component, percent)
        elif action == LOG_LEVEL and component is not None and level is not None:
            server.log_levels.set(component, level, wait or 30.0)
            if isinstance(runtime, ContinuousRuntime):
                runtime.set_log_level(component, level, wait or 30.0)
        elif action == PROFILE and workers is None:  # the driver's loop: this thread
            server.driver_profile = CpuProfile(wait or 1.0)
        elif action == PROFILE and isinstance(runtime, ContinuousRuntime) and workers is not None:
            runtime.ask_profile(workers, wait or 1.0)
        elif action == STACKS and isinstance(runtime, ContinuousRuntime) and workers is not None:
            runtime.ask_stacks(workers)
        elif action == REBALANCE:
            try:
                if isinstance(runtime, ContinuousRuntime):
                    _publish(server, runtime, "REBALANCING")
                    runtime.rebalance(workers, DRAIN_SECS if wait is None else wait, executors)
            except ValueError as exc:  # the cluster's slots changed since the API checked
                log.warning("%s", exc)
            finally:
                server.control.rebalancing -= 1
        _publish(server, runtime, *(_ending(runtime, stop.why) if stop.is_set() else ()))


def _close(
    server: ControlServer | None,
    runtime: Runtime,
    why: str,
    failure: BaseException | None = None,
) -> None:
    """The API's last snapshot, then no API: a page watching gets to read how it ended."""
    if server is not None:
        _publish(server, runtime, *_ending(runtime, why, failure), final=True)
        _let_the_page_read(server.control)
        server.stop()
        if server.control.drpc is not None:
            server.control.drpc.close()


def _ending(runtime: Runtime, why: str, failure: BaseException | None = None) -> tuple[str, str]:
    """The status a run that ends shows, and why: HALTED (and the error), or KILLED.

    KILLED is Storm's status of a topology stopped on purpose; ``why`` says how (a kill,
    Ctrl-C, SIGTERM, or a finite run that finished).
    """
    halted = runtime.errors.halted
    if halted is None and failure is None:
        return "KILLED", why or "stopped"
    why = halted.message if halted is not None else f"{type(failure).__name__}: {failure}"
    return "HALTED", (why.strip().splitlines() or [""])[0][:500]


LAST_READ_SECS = 2.5
"""How long a run that ends waits for a page reading it to read the last snapshot."""


def _let_the_page_read(control: Control) -> None:
    """Wait, briefly, for a page that polls the summary to read the last figures.

    Only when a client read the summary within a few of the page's 2 s polls: a run
    nobody watches ends at once. The page reads the summary, then the topology's (or a
    component's) figures: the wait ends once it has read those.
    """
    ended = time.monotonic()
    if ended - control.last_read > 3 * LAST_READ_SECS:
        return
    while control.last_figures_read < ended and time.monotonic() - ended < LAST_READ_SECS:
        time.sleep(0.05)


class _Stop(threading.Event):
    """Set when the run is asked to stop (a signal, a kill); ``why`` says how it ends."""

    def __init__(self) -> None:
        super().__init__()
        self.why = ""


class _Interrupted(BaseException):
    """Raised by the first stop signal inside a user call the watchdog found blocked."""

    def __init__(self, call: str) -> None:
        super().__init__(call)
        self.call = call


def _install_stop_handlers(stop: _Stop, blocked: Callable[[], str | None]) -> dict[int, Any] | None:
    """Ctrl-C or SIGTERM sets ``stop``; a second one raises ``KeyboardInterrupt``.

    The first acts at once even when a user call blocks: a watchdog knows it does
    (``blocked`` says which call), and the call is interrupted (on Spark, its superstep
    is cancelled); the graceful stop then goes on without it.
    """
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.why = "stopped by Ctrl-C" if signum == signal.SIGINT else "stopped by SIGTERM"
        stop.set()
        call = blocked()
        if call is not None:
            raise _Interrupted(call)

    return {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}


def _restore_handlers(previous: dict[int, Any] | None) -> None:
    for signum, handler in (previous or {}).items():
        signal.signal(signum, handler)
