"""The driver's superstep loop for one topology (the control plane).

A step, at topology time ``now``: hand the acker's outcomes to the spout tasks; fire the
ticks that are due (spout timeouts, acker and bolt tick tuples); call ``next_tuple`` on
each active spout task; then let the engine deliver every tuple in flight (one hop, or
several between tasks of one worker: ``tasks/hops.py``). Tuple trees complete within
a step or over several; ack traffic is ordinary rows. A pipelined
engine (Spark's, by default) hands back the previous superstep's result while this one
runs, so the spouts' work overlaps the job and outcomes arrive one step later.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sparkstorm._types import SHUTDOWN, FailReason
from sparkstorm.config import (
    SPARKSTORM_CAPTURE_MAX_VALUES,
    SPARKSTORM_GC_GEN0_THRESHOLD,
    SPARKSTORM_SEED,
    SPARKSTORM_SPOUT_BATCH,
    SPARKSTORM_SUPERSTEP_TARGET_SECS,
    TOPOLOGY_ERROR_THROTTLE_INTERVAL_SECS,
    TOPOLOGY_MAX_ERROR_REPORT_PER_INTERVAL,
    TOPOLOGY_MAX_SPOUT_PENDING,
)
from sparkstorm.control.batch_sizing import SpoutBatchSizer
from sparkstorm.control.captures import Captures
from sparkstorm.control.checkpoints import Checkpoints
from sparkstorm.control.clock import Clock
from sparkstorm.control.debugging import Debugging
from sparkstorm.control.kept_errors import KeptErrors
from sparkstorm.control.metrics_consumers import MetricsConsumers
from sparkstorm.control.restarts import RestartStrategy
from sparkstorm.control.submit import submitted
from sparkstorm.engines.base import Engine
from sparkstorm.engines.wire import StepResult
from sparkstorm.reliability.base_collector import ErrorThrottle, ReportedError
from sparkstorm.reliability.debug import apply_debug
from sparkstorm.tasks.gc_tuning import fewer_collections
from sparkstorm.tasks.metrics import TaskStats, by_component, by_task
from sparkstorm.tasks.profile import Profile
from sparkstorm.tasks.spout_task import SpoutTask, all_dry_since
from sparkstorm.tasks.ticks import due, tickers_for
from sparkstorm.topology.builder import Topology
from sparkstorm.topology.streams import SYSTEM_COMPONENT_ID
from sparkstorm.topology.tuple import Row, checkpoint_tuple
from sparkstorm.topology.windowing import WindowedBolt

log = logging.getLogger(__name__)


class TopologyRuntime:
    """Runs one submitted topology: spout tasks, ticks and the engine's supersteps."""

    def __init__(
        self,
        name: str,
        topology: Topology,
        conf: dict[str, Any] | None,
        engine: Engine,
        clock: Clock,
        *,
        active: bool = True,
        capture: bool = False,
    ) -> None:
        self.name = name
        self.conf, self.plan = submitted(name, topology, conf)
        self.engine = engine
        self.clock = clock
        seed = self.conf[SPARKSTORM_SEED]
        self.spouts = {t: SpoutTask(self.plan, t, seed) for t in self.plan.spout_tasks}
        self.superstep = 0
        self.supersteps_run = 0
        """Steps that gave the engine something to do (an idle step launches nothing)."""
        self.active = False
        self.killed = False
        self.draining_until: float | None = None
        """While a stop drains: when (``time.monotonic()``) the drain gives up."""
        self.api_url: str | None = None
        self.api_shown: tuple[str, str | None] | None = None
        """The API's address for people, and its token when off loopback (it is needed)."""
        """The REST API's address, when the run serves one."""
        self.errors = KeptErrors()
        """The tasks' errors: the first and the latest (``control/kept_errors``)."""
        self.debugging = Debugging(self.plan)
        """Storm UI's Debug: the components' debug shares and the latest lines noted."""
        self.captured = Captures(self.conf[SPARKSTORM_CAPTURE_MAX_VALUES])
        """Captured components' emits, the latest of each stream (``control/captures``)."""
        self.bolt_stats: dict[int, TaskStats] = {}
        self._outcomes: list[Row] = []
        self.profile = Profile()
        """Seconds spent per phase since submit (see :mod:`sparkstorm.tasks.profile`)."""
        self._in_flight = 0
        self._last_emitted = 0
        self._carrying = False
        """Whether the superstep launched last carries more than tick tuples."""
        self._system_rows: list[Row] = []
        """Instructions for tasks to send with the next superstep (a stop to windows)."""
        self.sizer = SpoutBatchSizer(
            self.conf[SPARKSTORM_SUPERSTEP_TARGET_SECS] or engine.target_superstep_secs,
            fixed=self.conf[SPARKSTORM_SPOUT_BATCH],
            max_pending=self.conf[TOPOLOGY_MAX_SPOUT_PENDING],
        )
        """Sizes each superstep's spout batch (see :mod:`sparkstorm.control.batch_sizing`)."""
        self._launched: dict[int, tuple[float, int, bool]] = {}
        """Superstep -> (when its step began, its spout batch, whether a spout used it all)."""
        self._last_result_at = 0.0
        self.last_result_superstep = -1
        """The superstep whose result the driver took last."""
        self._tickers = tickers_for(self.plan, self.conf)
        captured = (
            frozenset(self.plan.task_component.values())
            if capture
            else self.plan.captured_components()
        )
        self._throttles: dict[tuple[str, int], ErrorThrottle] = {}
        self.checkpoints = Checkpoints(self)
        self.metrics = MetricsConsumers(self.conf)
        """Checkpoints of stateful bolts' state (see :mod:`sparkstorm.control.checkpoints`)."""
        self._spout_captured: list[tuple[str, str, list[Any]]] = []
        self._start(seed, captured, active)
        self.restarts = RestartStrategy.from_conf(self.conf)
        """Counts lost supersteps: how long to wait before the next, when to give up."""
        self._resume_at: float | None = None
        """After a lost superstep: when (``time.monotonic()``) the next one may start."""
        self._stopping = False

    def _start(self, seed: int, captured: frozenset[str], active: bool) -> None:
        """Start the engine and open the spouts; topology time starts once both are up."""
        self.engine.start(self.plan, seed, captured)
        for spout in self.spouts.values():
            if spout.component_id in captured:
                spout.collector.capture(self._spout_captured)
            spout.open()
        self._collect_spout_reports()
        self._epoch = self.clock.now()
        if active:
            self.activate()

    def now(self) -> float:
        """Topology time: seconds since submit on the cluster's clock."""
        return self.clock.now() - self._epoch

    def activate(self) -> None:
        """Start calling ``next_tuple``; calls ``activate`` on each spout on the transition."""
        if not self.active and not self.killed:
            self.active = True
            for spout in self.spouts.values():
                spout.guarded(spout.spout.activate)
            self._collect_spout_reports()

    def deactivate(self) -> None:
        """Stop calling ``next_tuple``; calls ``deactivate`` on each spout on the transition."""
        if self.active:
            self.active = False
            for spout in self.spouts.values():
                spout.guarded(spout.spout.deactivate)
            self._collect_spout_reports()

    def idle(self) -> bool:
        """No tuple in flight, no outcome undelivered, and the spouts emitted nothing.

        A superstep still running that carries only tick tuples does not count: a bolt
        that ticks more often than a superstep lasts would never let a run go idle.
        What the spouts hold back does not count either (see :meth:`holding`).
        """
        return (
            not self._outcomes
            and not self._in_flight
            and not self._last_emitted
            and not (self.engine.busy and self._carrying)
        )

    def holding(self) -> str | None:
        """What a spout holds back though it emits nothing, if one does.

        Not part of :meth:`idle`: a checkpoint's drain and a stop pause the spouts, so
        what they hold cannot go out before those end; an until-idle run waits for it.
        """
        return next(filter(None, (s.holding() for s in self.spouts.values())), None)

    def spouts_dry_since(self) -> float | None:
        """Since when (monotonic) every spout has been dry, or None while one is not.

        See :meth:`SpoutTask.dry_since`: an until-idle run's grace counts from here.
        """
        return all_dry_since(self.spouts.values())

    def spout_stats(self) -> list[TaskStats]:
        """The spout tasks' statistics (their complete latencies feed the history)."""
        return [spout.stats for spout in self.spouts.values()]

    def busy_with(self) -> str:
        """What keeps the topology from being idle, in words (for a wait that timed out)."""
        holding = self.holding()
        return (
            f"{self._in_flight} tuple(s) in flight, {self.pending_count()} msg id(s) "
            f"pending, spouts emitted {self._last_emitted} in the last superstep"
            + (f"; {holding}" if holding else "")
        )

    def step(self) -> None:
        """Run one superstep (see the module docstring)."""
        with fewer_collections(self.conf[SPARKSTORM_GC_GEN0_THRESHOLD]):
            self._step()

    def _step(self) -> None:
        if self._resume_at is not None:  # a superstep was lost: the strategy's delay
            if time.monotonic() < self._resume_at:
                time.sleep(min(0.05, self._resume_at - time.monotonic()))
                return
            self._resume_at = None
            self.restarts.running()
        started = time.perf_counter()
        now = self.now()
        for spout in self.spouts.values():
            spout.begin(self.superstep, now)
        self._deliver_outcomes(now)
        rows = self.checkpoints.rows(now)  # before every other row a task gets
        rows += self._system_rows
        self._system_rows = []
        ticks = self._fire_ticks(now)
        emitted, batch, saturated = 0, self.sizer.batch, False
        asking = self.active and not self.checkpoints.pausing
        sent: list[Row] = []
        for spout in self.spouts.values():
            if asking:
                emitted += spout.next_batch(batch)
                saturated = saturated or spout.saturated
            sent.extend(spout.drain())  # with what ack()/fail() emitted (replays)
        self.checkpoints.sending(self.superstep, ticks, sent)
        rows += ticks + sent
        self._last_emitted = emitted
        self._collect_spout_reports()
        if self._spout_captured:
            self.captured.add(self._spout_captured)
            self._spout_captured.clear()
        self.profile.add("spout", time.perf_counter() - started)
        if rows or self._in_flight or self.engine.busy:
            self._carrying = len(rows) > len(ticks) or bool(self._in_flight)  # not ticks only
            self.supersteps_run += 1
            self._launched[self.superstep] = (started, batch, saturated)
            self._take(self.engine.superstep(rows, self.superstep, now))
        self.superstep += 1
        self.metrics.observe(self._every_stats())

    def _every_stats(self) -> list[TaskStats]:
        """The latest statistics of every task, spouts first."""
        return [s.stats for s in self.spouts.values()] + list(self.bolt_stats.values())

    def _deliver_outcomes(self, now: float) -> None:
        """Hand the acker's last outcomes to their spout tasks (ack, fail or reset)."""
        outcomes, self._outcomes = self._outcomes, []
        for task, tup in outcomes:
            self.spouts[task].on_outcome(tup, now)

    def _take(self, result: StepResult) -> None:
        """Keep what a superstep returned: outcomes for the spouts, statistics, errors."""
        self.profile.merge(result.profile)
        launched, arrived = self._launched.pop(result.superstep, None), time.perf_counter()
        if launched is not None:
            # a superstep lasts from its step's start, or the result before it if later
            # (pipelined, its job starts then), to its result
            began, batch, saturated = launched
            self.sizer.observe(batch, saturated, arrived - max(began, self._last_result_at))
        self._last_result_at = arrived
        for superstep in [s for s in self._launched if s < result.superstep]:
            del self._launched[superstep]  # launched nothing, or its job was lost
        self._outcomes = result.spout_rows
        self._in_flight = result.in_flight
        if result.lost and not self._stopping:
            reason = result.errors[0].message if result.errors else "a Spark job failed"
            delay = self.restarts.lost("Spark supersteps were", reason)
            self._resume_at = time.monotonic() + delay
        self.last_result_superstep = max(self.last_result_superstep, result.superstep)
        for stats in result.stats:
            self.bolt_stats[stats.task] = stats
        self.checkpoints.observe(result)
        self._report(result.errors)
        self.captured.add(result.captured)
        self._note(result.debug)

    def _report(self, errors: list[ReportedError]) -> None:
        """Keep the tasks' errors and log them here, on the driver, as they arrive.

        A task that ran in several Spark Python workers was throttled in each: the
        driver throttles again, per task, so that at most
        ``topology.max.error.report.per.interval`` of a task's errors per interval are
        kept and logged whichever worker ran it; the rest are counted on the last record.
        """
        for reported in errors:
            error = self._throttled(reported)
            if error is None:
                continue
            self.errors.append(error)
            if not error.throttled and not error.recovered:  # the engine warned of those
                trace = f"\n{error.traceback}" if error.traceback else ""
                log.error("error in %s:%s: %s%s", error.component, error.task, error.message, trace)

    def _throttled(self, error: ReportedError) -> ReportedError | None:
        """``error`` to keep, or None once counted on the record it repeats."""
        if error.component == SYSTEM_COMPONENT_ID:
            return error
        key = (error.component, error.task)
        throttle = self._throttles.get(key)
        if throttle is None:
            conf = self.plan.component_conf(error.component)
            throttle = self._throttles[key] = ErrorThrottle(
                conf[TOPOLOGY_MAX_ERROR_REPORT_PER_INTERVAL],
                conf[TOPOLOGY_ERROR_THROTTLE_INTERVAL_SECS],
            )
        if not error.throttled and throttle.admit(error.message, error.time) != throttle.COUNT:
            return error
        for i in range(len(self.errors) - 1, -1, -1):
            kept = self.errors[i]
            if (kept.component, kept.task, kept.message) == (*key, error.message):
                self.errors[i] = replace(kept, count=kept.count + error.count)
                return None
        return replace(error, throttled=True, traceback="")

    def _note(self, debug: list[str]) -> None:
        """Log the tasks' ``topology.debug`` lines here, on the driver, as they arrive."""
        self.debugging.note(debug)

    def set_debug(self, component: str | None, percent: float) -> None:
        """Storm UI's Debug: sample ``percent`` of a component's calls (None: all's)."""
        shares = self.debugging.set(component, percent)
        apply_debug(self.spouts, shares)
        self.engine.set_debug(shares)

    def discard_pending(
        self, reason: FailReason, culprits: dict[int, FailReason] | None = None
    ) -> None:
        """Drop every tuple in flight and fail every pending tree with ``reason`` (a rollback).

        Outcomes already decided are delivered first, then the ``culprits`` (trees whose
        processing called for the rollback, by root) fail with their own reason; what the
        spouts emit in ``fail`` (replays) goes out with the next superstep.
        """
        running = self.engine.collect()
        if running is not None:
            self._take(running)
        self.engine.discard_in_flight()
        self._in_flight = 0
        self._deliver_outcomes(self.now())
        for spout in self.spouts.values():
            spout.fail_culprits(culprits or {})
            spout.fail_pending(reason)

    def _fire_ticks(self, now: float) -> list[Row]:
        rows, spout_ticks = due(self._tickers, now)
        for _ in range(spout_ticks):
            for spout in self.spouts.values():
                spout.tick()
        return rows

    def _collect_spout_reports(self) -> None:
        """Report the spouts' errors and log their ``topology.debug`` lines."""
        errors: list[ReportedError] = []
        debug: list[str] = []
        for spout in self.spouts.values():
            spout.collector.hand_over(errors, debug)
        self._report(errors)
        self._note(debug)

    def calling(self) -> tuple[str, Any] | None:
        """The user call running on the driver now, with a progress marker (the watchdog's).

        A spout's ``next_tuple``, ``ack``, ``fail``...; on the local engine, a bolt's
        ``execute``. None between user calls.
        """
        for spout in self.spouts.values():
            seen = spout.call_under_way()
            if seen is not None:
                return seen
        return self.engine.call_under_way()

    @property
    def in_flight(self) -> int:
        """Tuples the engine holds for the next superstep."""
        return self._in_flight

    def pending_count(self) -> int:
        """Tracked msg ids awaiting an outcome, over all spout tasks."""
        return sum(len(spout.pending) for spout in self.spouts.values())

    def kill(
        self,
        max_steps: int = 10_000,
        drain_secs: float | None = None,
        *,
        wait_pending: bool = False,
        progress: Callable[[], None] | None = None,
    ) -> None:
        """Deactivate, let in-flight tuples drain, fail what is still pending, close.

        ``progress`` is called between the drain's steps (the live table's countdown).
        The drain lasts until nothing is in flight (with ``wait_pending``, also until no
        tracked message is pending: ticks keep coming, so a bolt that buffers its input
        gets to flush and ack it), ``max_steps`` supersteps or ``drain_secs`` wall
        seconds. Once nothing is in flight, windowed bolts are told to stop: the tuples
        their windows still hold (for windows that will not come) fail with ``shutdown``.
        Every pending msg id gets an outcome: trees still incomplete after it are failed
        to their spout with reason ``shutdown`` before ``close`` is called.
        """
        if self.killed:
            return
        self._stopping = True
        self.deactivate()
        deadline = None if drain_secs is None else time.monotonic() + drain_secs
        self.draining_until = deadline
        windows = [
            task
            for bolt in self.plan.topology.bolts
            if isinstance(bolt.obj, WindowedBolt)
            for task in self.plan.component_tasks(bolt.component_id)
        ]
        for _ in range(max_steps):
            idle = self.idle()
            done = idle and not (wait_pending and self.pending_count())
            if done or (deadline is not None and time.monotonic() > deadline):
                break
            if idle:
                if windows:  # quiet, and trees pending: those windows hold wait for nothing
                    self._system_rows = [(task, checkpoint_tuple("stop", -1)) for task in windows]
                    windows = []
                time.sleep(0.005)  # trees wait in bolts: let the clock bring their ticks
            self.step()
            if progress is not None:
                progress()
        running = self.engine.collect()  # a pipelined superstep may still run: its outcomes count
        if running is not None:
            self._take(running)
        self._deliver_outcomes(self.now())
        for spout in self.spouts.values():
            spout.fail_all_pending(SHUTDOWN)
            spout.close()
        self._collect_spout_reports()
        self._report(self.engine.stop())
        self.killed = True
        self.metrics.close(self._every_stats())

    def superstep_secs(self) -> float:
        """Seconds the engine spent running supersteps (Spark: its jobs; local: the tasks).

        Capacity is measured against it: the time between supersteps, when a stream
        waits for its source, is nobody's load.
        """
        profile = self.profile
        if "spark_job" in profile:
            return profile["spark_job"]
        return profile.get("deliver", 0.0) + profile.get("execute", 0.0)

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per-component statistics (Storm UI's names), ``__acker`` included."""
        tasks = [s.stats for s in self.spouts.values()] + list(self.bolt_stats.values())
        stats = by_component(tasks, self.superstep_secs())
        for component, row in stats.items():
            spec = self.plan.components.get(component)
            row["kind"] = "acker" if spec is None else "spout" if spec.is_spout else "bolt"
            if row["kind"] == "spout":  # per task and superstep, as the sizer set it
                row["pending"] = sum(
                    len(spout.pending)
                    for spout in self.spouts.values()
                    if spout.component_id == component
                )
                row["spout_batch"] = self.sizer.batch
                row["superstep_target_secs"] = self.sizer.target_secs
            else:
                row["snapshot_bytes_per_superstep"] = round(
                    row["snapshot_bytes"] / max(1, self.supersteps_run)
                )
        return stats

    def workers(self) -> list[dict[str, Any]]:
        """The Spark Python workers that ran supersteps, and the tasks each ran last.

        A superstep runs wherever Spark puts its tasks, so a task may move between them.
        """
        return self.engine.workers_seen()

    @property
    def worker_logs(self) -> dict[int, list[tuple[float, str]]]:
        """Each worker of :meth:`workers`: its latest Python log records (when, line)."""
        return self.engine.logs_seen()

    def task_stats(self) -> dict[str, list[dict[str, Any]]]:
        """Per-task statistics by component (Storm UI's executors), ``__acker`` included."""
        rows = by_task(
            [s.stats for s in self.spouts.values()] + list(self.bolt_stats.values()),
            self.superstep_secs(),
        )
        for task, spout in self.spouts.items():
            rows[task]["pending"] = len(spout.pending)
        grouped: dict[str, list[dict[str, Any]]] = {}
        for task in sorted(rows):
            grouped.setdefault(rows[task]["component"], []).append(rows[task])
        return grouped
