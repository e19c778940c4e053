"""``sparkstorm.run``: run one topology on the wall clock until idle, a duration, or Ctrl-C."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from sparkstorm.config import TOPOLOGY_MESSAGE_TIMEOUT_SECS
from sparkstorm.engines import make_engine
from sparkstorm.reliability.collectors import ReportedError
from sparkstorm.runtime.clock import WallClock
from sparkstorm.runtime.superstep import TopologyRuntime
from sparkstorm.topology.builder import Topology


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
    startup_secs: float = 0.0
    supersteps: int = 0
    interrupted: bool = False
    profile: dict[str, float] = field(default_factory=dict)
    """Seconds spent per phase: spout loop, Spark job, decoding, bolt code... (see
    :data:`sparkstorm.runtime.profile.PHASES`)."""


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
    on_progress: Callable[[TopologyRuntime], None] | None = None,
    progress_secs: float = 1.0,
    on_start: Callable[[TopologyRuntime], None] | None = None,
    spark_ui: bool = True,
) -> RunResult:
    """Run ``topology`` on ``engine`` and return its statistics when it stops.

    It stops when it is idle (``until_idle``, the default without ``duration``: nothing in
    flight, spouts emit nothing, and every tracked message has had its outcome), after
    ``duration`` seconds, or on Ctrl-C: spouts stop being asked for tuples, in-flight
    trees get up to the message timeout to finish, what is still pending fails back to
    its spout with reason ``shutdown``, and spouts are closed. Called on the driver;
    Ctrl-C is handled when called from the main thread. ``on_start`` is called once the
    engine runs (the Spark UI's address is ``runtime.engine.ui_url`` then);
    ``spark_ui=False`` turns the UI off for a session created here.

    .. versionadded:: 0.1.0
    """
    if until_idle is None:
        until_idle = duration is None
    started = time.monotonic()
    made = make_engine(engine, spark=spark, master=master, spark_ui=spark_ui)
    runtime = TopologyRuntime(name, topology, conf, made, WallClock())
    startup = time.monotonic() - started
    if on_start is not None:
        on_start(runtime)
    stop = threading.Event()
    previous = _install_sigint(stop)
    next_report = time.monotonic() + progress_secs
    try:
        while not stop.is_set():
            runtime.step()
            if until_idle and runtime.idle() and not runtime.pending_count():
                break  # nothing in flight and every tracked message has its outcome
            if duration is not None and runtime.now() >= duration:
                break
            if on_progress is not None and time.monotonic() >= next_report:
                on_progress(runtime)
                next_report = time.monotonic() + progress_secs
            if runtime.idle():
                time.sleep(0.005)  # nothing in flight and nothing to emit: do not spin
    finally:
        _restore_sigint(previous)
        runtime.kill(drain_secs=runtime.conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS])
    return RunResult(
        name,
        engine,
        runtime.stats(),
        runtime.errors,
        runtime.captured,
        time.monotonic() - started - startup,
        startup,
        runtime.superstep,
        stop.is_set(),
        dict(runtime.profile),
    )


def _install_sigint(stop: threading.Event) -> Any:
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C aborts

    return signal.signal(signal.SIGINT, handler)


def _restore_sigint(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGINT, previous)
