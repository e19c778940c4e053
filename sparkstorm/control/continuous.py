"""The control plane of the continuous mode: commands out, reports in, no tuple.

:class:`ContinuousRuntime` offers the run loop (``control/run.py``) what
:class:`~sparkstorm.control.superstep.TopologyRuntime` offers it, for a topology whose
tasks all live in long-running workers. A ``step`` here waits briefly for the workers'
reports and keeps the newest statistics of each task; the topology is idle when every
worker has reported nothing waiting, every tuple sent between workers has been received,
no tracked message is pending and the spouts' emit counters stood still between two
rounds of reports: quiescence read from counters, not guessed from a quiet period.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sparkstorm.config import (
    SPARKSTORM_CAPTURE,
    SPARKSTORM_CAPTURE_MAX_VALUES,
    SPARKSTORM_SEED,
    SPARKSTORM_WORKER_TIMEOUT_SECS,
)
from sparkstorm.control.captures import Captures
from sparkstorm.control.clock import Clock, SimulatedClock
from sparkstorm.control.continuous_checkpoints import ContinuousCheckpoints
from sparkstorm.control.debugging import Debugging
from sparkstorm.control.kept_errors import KeptErrors
from sparkstorm.control.metrics_consumers import MetricsConsumers
from sparkstorm.control.restarts import RestartStrategy
from sparkstorm.control.submit import submitted
from sparkstorm.engines.continuous.driver import ContinuousEngine, WorkersLost
from sparkstorm.engines.continuous.worker import (
    DEBUG,
    EPOCH,
    FEED,
    LOG_LEVEL,
    PROFILE,
    STACKS,
    SYSTEM,
    TIME,
    DriverFed,
    WorkerReport,
)
from sparkstorm.errors import SparkStormError
from sparkstorm.reliability.base_collector import ReportedError
from sparkstorm.tasks.log_ring import relog
from sparkstorm.tasks.metrics import TaskStats, by_component, by_task, progress
from sparkstorm.tasks.process_usage import ProcessUsage, usage_row
from sparkstorm.tasks.profile import Profile
from sparkstorm.tasks.spout_task import Failures
from sparkstorm.topology.builder import Topology
from sparkstorm.topology.streams import SYSTEM_COMPONENT_ID, SYSTEM_TASK_ID
from sparkstorm.topology.windowing import is_windowed

log = logging.getLogger(__name__)

SHUTDOWN_SECS = 60.0
"""How long the workers may take to fail what is pending, close and clean up."""
DRAIN_SECS = 30.0
"""How long a kill without a limit waits for tuples in flight."""
IDLE_PROBE_SECS = 0.05
"""On the wall clock, how often :meth:`ContinuousRuntime.idle` probes the workers."""
QUICK_VERDICTS = 2
"""A stop's drain takes its first idle verdicts without waiting between them: enough
for a topology that was idle when the stop came to be found so at once (the first
verdict after the spouts' deactivation only records their emits)."""
PROBE_TIMEOUT_SECS = 10.0
"""How long a probe waits for every worker's answer."""
WORKER_LOG_LINES = 1000
"""How many of each worker's log records the driver keeps."""
CPU_SHARE_SECS = 3.0
"""A worker's CPU % is measured over the last 3 to 6 seconds of its reports."""


CARRIED = ("sent", "received", "dropped", "turns")
"""A worker's counts that go on across its restarts, as the page shows them."""


class ContinuousRuntime:
    """Runs one submitted topology in long-running workers, from the driver."""

    def __init__(
        self,
        name: str,
        topology: Topology,
        conf: dict[str, Any] | None,
        engine: ContinuousEngine,
        clock: Clock | None = None,
        *,
        active: bool = True,
        capture: bool = False,
    ) -> None:
        self.name = name
        self.conf, self.plan = submitted(name, topology, conf)
        self.engine = engine
        self.active = False
        self.killed = False
        self.draining_until: float | None = None
        """While a stop drains: when (``time.monotonic()``) the drain gives up."""
        self.api_url: str | None = None
        self.api_shown: tuple[str, str | None] | None = None
        """The API's address for people, and its token when off loopback (it is needed)."""
        self.errors = KeptErrors()
        """The tasks' errors: the first and the latest (``control/kept_errors``)."""
        self.debugging = Debugging(self.plan)
        """Storm UI's Debug: the components' debug shares and the latest lines noted."""
        self.captured = Captures(self.conf[SPARKSTORM_CAPTURE_MAX_VALUES])
        """Captured components' emits, the latest of each stream (``control/captures``)."""
        self.profile = Profile()
        self.supersteps_run = 0
        self.latest_stats: dict[int, TaskStats] = {}
        """Each task's newest statistics, as its worker last reported them."""
        self._last_error: dict[tuple[str, int, str], int] = {}
        self._trims_seen = 0
        self._failure: BaseException | None = None
        self._down: BaseException | None = None
        """What took the workers down, until they run again (each loss counts once)."""
        self._restart_at = 0.0
        """While the workers are down: when (``time.monotonic()``) they start again."""
        self._lost_stats: list[TaskStats] = []
        """Statistics of the tasks of stage attempts that were lost (they add up)."""
        self._failures_before: Failures = {}
        """Per spout task, what its lost starts left failed for good, until its next start
        reports (it took them on: a replay acked there settles a message)."""
        self.reports: dict[int, WorkerReport] = {}
        """Each worker's newest report."""
        self._dry_at: dict[int, float | None] = {}
        """Per worker, since when (the driver's monotonic clock) its spouts have been dry
        by its newest report, None while one is not (see :meth:`spouts_dry_since`)."""
        self._before: dict[int, dict[str, int]] = {}
        """Per worker index, the counts of its earlier lives (a restart starts them at 0)."""
        self._launched = 0.0
        """When (the run's clock) the workers running now started: capacity is since then."""
        self.stacks: dict[int, tuple[float, str]] = {}
        """Per worker, the latest dump of its threads the operator asked for: (when, text)."""
        self.cpu_profiles: dict[int, tuple[float, str]] = {}
        """Per worker, the latest CPU profile the operator asked for: (when, text)."""
        self.worker_logs: dict[int, deque[tuple[float, str]]] = {}
        """Per worker, its latest Python log records (when they came, the line)."""
        self._usage_marks: dict[int, tuple[ProcessUsage, ProcessUsage]] = {}
        """Per worker, two usages at least :data:`CPU_SHARE_SECS` apart, the newer at
        most that old: its CPU share is measured from the older."""
        if capture:
            self.conf[SPARKSTORM_CAPTURE] = sorted(self.plan.components)
        self.clock = clock
        self.simulated = isinstance(clock, SimulatedClock)
        self._clock_epoch = clock.now() if clock is not None else 0.0
        self._sent_time = 0.0
        self._idle_at = (0.0, False)  # (when probed, what the probes said)
        self._quiet_counters: dict[int, int] | None = None
        """The spouts' emits the last probes found, by worker: an idle verdict needs the
        same twice."""
        self._fed = {
            spec.obj.feeder_key: (spec.obj, self.plan.component_tasks(cid)[0])
            for cid, spec in self.plan.components.items()
            if isinstance(spec.obj, DriverFed)
        }
        self.checkpoints = ContinuousCheckpoints(self)
        self.metrics = MetricsConsumers(self.conf)
        """Checkpoints of stateful bolts' state (see ``control/continuous_checkpoints``)."""
        self.restarts = RestartStrategy.from_conf(self.conf)
        """Counts the workers' losses: when to start them again, when to give up."""
        self._epoch = time.time()
        engine.timeout_secs = self.conf[SPARKSTORM_WORKER_TIMEOUT_SECS]
        try:
            engine.start(
                self.plan,
                self.conf[SPARKSTORM_SEED],
                time.time(),
                simulated=self.simulated,
                replays=self.checkpoints.replays,
            )
        except WorkersLost as exc:  # a first start lost as any later one: started again
            try:
                self._lost(exc)
            except BaseException:
                engine.close()
                raise
        # topology time starts once every worker is up, so that the stage's start-up
        # neither eats into --duration nor turns into a burst of due ticks
        self._epoch = time.time()
        engine.command((EPOCH, self._epoch))
        if not self.restarting:
            self.restarts.running()
        if active:
            self.activate()

    def now(self) -> float:
        """Topology time: seconds since the workers were started (or as simulated)."""
        if self.simulated and self.clock is not None:
            return self.clock.now() - self._clock_epoch
        return time.time() - self._epoch

    def activate(self) -> None:
        """Start the spouts' ``next_tuple`` calls in every worker."""
        if not self.active and not self.killed:
            self.active = True
            self.engine.activate()
            self._forget_idle()

    def deactivate(self) -> None:
        """Stop the spouts' ``next_tuple`` calls; tuples in flight go on."""
        if self.active and not self.killed:
            self.active = False
            self.engine.deactivate()
            self._forget_idle()

    def step(self, wait: float | None = None) -> None:
        """Send simulated time and fed tuples on; take the reports of a short wait.

        ``wait``: how long, in seconds (default 2 ms with simulated time, else 20).
        """
        self._send_commands()
        if wait is None:
            wait = 0.002 if self.simulated else 0.02
        for report in self.engine.reports(wait):
            self.take_report(report)
        if self._failure is not None and not self.killed:
            self.kill(drain_secs=0)
            raise self._failure
        failure = self.engine.launcher.failure()
        if failure is not None and self._down is None and not self.killed:
            self._lost(failure)
        silent = self.engine.silent()
        if silent is not None and self._down is None and not self.killed:
            self._lost_silent(*silent)
        if self.restarting and self.draining_until is None and time.monotonic() >= self._restart_at:
            self._restart()
        self.checkpoints.advance(self.now())
        self.metrics.observe(self.latest_stats.values())

    @property
    def restarting(self) -> bool:
        """Whether the workers were lost and have not started again yet."""
        return self._down is not None

    def _lost(self, failure: BaseException) -> None:
        """The stage was lost (a worker died, or a restart failed): count it, once.

        The restart strategy says how long to wait before the workers start again, or
        gives up (one line). Tasks come back from ``prepare``/``open``; what the lost
        stage held in flight or pending is gone, as when a Storm worker dies, and sources
        redeliver what was never acked (a broker returns a dead consumer's unacked
        messages). The statistics of the lost attempt are kept and added to the new one's.
        """
        self._down = failure
        reason = (str(failure).strip().splitlines() or [type(failure).__name__])[0][:400]
        worker = getattr(failure, "worker", None)
        host = self.engine.hosts.get(worker) if worker is not None else None
        try:
            delay = self.restarts.lost("the continuous workers were", reason, worker, host)
        except SparkStormError as exc:
            raise exc from failure
        message = (
            f"a continuous worker was lost ({reason}); the workers start again "
            f"(attempt {self.engine.attempt + 2}) in {delay:g} s"
        )
        log.warning("%s", message)
        self.errors.append(
            ReportedError(SYSTEM_COMPONENT_ID, SYSTEM_TASK_ID, self.now(), message, recovered=True)
        )
        self._retire_workers()
        self._restart_at = time.monotonic() + delay
        self._forget_idle()

    def _lost_silent(self, worker: int, secs: float) -> None:
        """A worker sent nothing for ``sparkstorm.worker.timeout.secs``: a loss.

        As Storm's supervisor restarts a worker whose heartbeats stopped. Its host may
        be cut off: the stage is cancelled (Spark kills what it can reach) and started
        again, on the slots there are.
        """
        host = self.engine.hosts.get(worker, "?")
        self.engine.launcher.cancel()
        reason = (
            f"worker {worker} (on {host}) sent nothing for {secs:.0f} s "
            f"({SPARKSTORM_WORKER_TIMEOUT_SECS}): its host or its network is down"
        )
        self._lost(WorkersLost(reason, worker))

    def _restart(self) -> None:
        """Start the workers again; a start that fails is one more loss.

        Over fewer workers when the cluster has fewer task slots than before (a host
        gone for good): a barrier stage would wait for slots that do not come.
        """
        workers, slots = self.engine.workers, self.engine.launcher.slots()
        if slots and slots < workers:  # none at all: wait for one with as many workers
            log.warning(
                "the cluster has %d task slots for the %d continuous workers: the tasks "
                "are placed over %d (sparkstorm rebalance %s --workers N grows it again)",
                slots,
                workers,
                slots,
                self.name,
            )
            workers = slots
        try:
            self.engine.relaunch(workers, self.checkpoints.replays, failures=self._failures_before)
        except WorkersLost as exc:
            self._lost(exc)
            return
        self._down = None
        self.restarts.running()
        self._resume()

    def _retire_workers(self) -> None:
        """The workers are gone: keep their tasks' figures and their counts, for ever."""
        for stats in self.latest_stats.values():
            keys, stats.failed_keys = stats.failed_keys, {}
            failures = Counter(stats.failed_for_good) + Counter(stats.replay_pending)
            if failures:  # a spout's, which its next start takes on
                self._failures_before[stats.task] = (dict(failures), keys)
        self._lost_stats.extend(self.latest_stats.values())
        for index, report in self.reports.items():
            before = self._before.setdefault(index, dict.fromkeys(CARRIED, 0))
            for key in CARRIED:
                before[key] += getattr(report, key)
        self.latest_stats, self.reports = {}, {}

    def _carried(self, index: int, key: str, report: WorkerReport | None) -> int | None:
        """A worker's count ``key`` over all its lives (None before any report)."""
        before = self._before.get(index, {}).get(key, 0)
        if report is None:
            return before or None
        return int(getattr(report, key)) + before

    def _resume(self) -> None:
        """Started workers take up the run: its clock, checkpoints, and active spouts."""
        self._launched = self.now()
        self._forget_idle()  # a verdict, or counters, of the workers before are not theirs
        self._sent_time = -1.0  # the new workers need the simulated time too
        self.checkpoints.restarted()
        self.engine.command((EPOCH, self._epoch))  # the run's clock goes on
        if self.active:
            self.engine.activate()

    def rebalance(
        self,
        workers: int | None = None,
        wait_secs: float = DRAIN_SECS,
        executors: dict[str, int] | None = None,
    ) -> None:
        """Storm's rebalance: the tasks placed over ``workers`` workers (default: as many).

        Each component of ``executors`` is kept in that many of them (``-e split=2``).
        The spouts are deactivated and what is in flight drains for up to ``wait_secs``;
        the workers then shut down as at a stop (what is still pending fails back to its
        spout with reason ``shutdown``, so every message has one outcome and its source
        replays it; stateful bolts keep what they committed), and start again over
        ``workers``, active if they were. Raises ``ValueError`` for more workers than the
        cluster has task slots, before anything stops.
        """
        workers = self.engine.workers if workers is None else workers
        slots = self.engine.launcher.slots()
        if workers < 1 or (slots is not None and workers > slots):
            msg = (
                f"rebalance of {self.name!r} to {workers} workers: it needs one task slot "
                f"per worker and the cluster has {slots}; ask for 1 to {slots}"
            )
            raise ValueError(msg)
        was_active = self.active
        self.deactivate()
        deadline = time.monotonic() + wait_secs
        while time.monotonic() < deadline and not self.restarting:
            self.step()
            if self.idle() and not self.pending_count():
                break
        if self.restarting:  # lost while draining: the restart places them instead
            self.active = was_active
            return
        for report in self.engine.shut_down(SHUTDOWN_SECS):
            self.take_report(report)
        log.warning("%s: the tasks are placed over %d workers (a rebalance)", self.name, workers)
        self._retire_workers()
        self.active = was_active
        try:
            self.engine.relaunch(
                workers, self.checkpoints.replays, executors, self._failures_before
            )
        except WorkersLost as exc:
            self._lost(exc)
            return
        self._resume()

    def _send_commands(self) -> None:
        """The simulated clock's new time, and what tests fed, to the workers."""
        now = self.now()
        if self.simulated and now != self._sent_time:
            self._sent_time = now
            self.engine.command((TIME, now))
        for key, (spout, task) in self._fed.items():
            items = spout.handed_over()
            if items:
                self.engine.command((FEED, key, items), self.plan.worker_of[task])
                self._forget_idle()

    def take_report(self, report: WorkerReport) -> None:
        """Keep what a worker reported: statistics, errors, captured tuples, fed outcomes."""
        if report.failure is not None and self._failure is None:
            self._failure = report.failure
        if self.restarting:  # a survivor of the lost stage, on its way out: its figures
            for error in report.errors:  # were retired with it, and would stand for the
                self._keep(error)  # new workers' (an acker's unready trees stalled a drain)
            return
        for stats in report.stats:
            if stats.task in self._failures_before:  # counted by the task's new start now
                del self._failures_before[stats.task]
                for old in self._lost_stats:
                    if old.task == stats.task:
                        old.failed_for_good, old.replay_pending = {}, {}
            kept = self.latest_stats.get(stats.task)
            if kept is None or progress(stats) >= progress(kept):  # never an older report's
                self.latest_stats[stats.task] = stats
        self.reports[report.worker] = report
        dry = report.dry_secs  # read on arrival: later than the worker's, never earlier
        self._dry_at[report.worker] = None if dry is None else time.monotonic() - dry
        if report.usage is not None:
            self._mark_usage(report.worker, report.usage)
        if report.stacks is not None:
            self.stacks[report.worker] = (time.time(), report.stacks)
        if report.cpu_profile is not None:
            self.cpu_profiles[report.worker] = (time.time(), report.cpu_profile)
        if report.log_lines:
            now = time.time()
            lines = self.worker_logs.setdefault(report.worker, deque(maxlen=WORKER_LOG_LINES))
            lines.extend((now, line) for line in report.log_lines)
            relog(f"worker {report.worker}", report.log_lines)
        self.supersteps_run = sum(r.turns for r in self.reports.values()) + sum(
            b["turns"] for b in self._before.values()
        )
        for error in report.errors:
            self._keep(error)
        self.debugging.note(report.debug)
        self.captured.add(report.captured)
        for key, outcomes in report.fed.items():
            self._fed[key][0].record(outcomes)

    def set_debug(self, component: str | None, percent: float) -> None:
        """Storm UI's Debug: sample ``percent`` of a component's calls (None: all's)."""
        self.engine.command((DEBUG, self.debugging.set(component, percent)))

    def set_log_level(self, logger: str, level: str, secs: float) -> None:
        """Storm UI's "Change log level", in every worker (the driver sets its own)."""
        self.engine.command((LOG_LEVEL, logger, level, secs))

    def ask_profile(self, worker: int, secs: float) -> None:
        """Ask ``worker`` to profile its loop for ``secs`` (in :attr:`cpu_profiles` then)."""
        self.engine.command((PROFILE, secs), worker)

    def ask_stacks(self, worker: int) -> None:
        """Ask ``worker`` for a dump of its threads (in :attr:`stacks` once it came)."""
        self.engine.command((STACKS,), worker)

    def _mark_usage(self, worker: int, usage: ProcessUsage) -> None:
        older, newer = self._usage_marks.get(worker, (usage, usage))
        if newer.started != usage.started or newer.at > usage.at:  # a restarted worker
            older = newer = usage
        if usage.at - newer.at >= CPU_SHARE_SECS:
            older, newer = newer, usage
        self._usage_marks[worker] = older, newer

    def _keep(self, error: ReportedError) -> None:
        """Log a task's error here, or count a throttled repeat on the record it repeats.

        A worker hands its errors over every turn, so repeats beyond the throttle would
        otherwise make a record each: they are counted on the last record instead.
        """
        if error.throttled:
            if self.errors.trims != self._trims_seen:  # the positions kept have moved
                self._last_error, self._trims_seen = {}, self.errors.trims
            key = (error.component, error.task, error.message)
            last = self._last_error.get(key)
            if last is not None:
                self.errors[last] = replace(
                    self.errors[last], count=self.errors[last].count + error.count
                )
                return
            self._last_error[key] = len(self.errors)
        else:
            trace = f"\n{error.traceback}" if error.traceback else ""
            log.error("error in %s:%s: %s%s", error.component, error.task, error.message, trace)
        self.errors.append(error)

    @property
    def in_flight(self) -> int:
        """Tuples waiting in workers or on their way between them, as last reported.

        The workers report at different moments: a receiver's newer report may count
        tuples a sender's older one does not yet, so the difference is taken as at least
        0 (it went as low as -321 on the page), and never hides what waits in a worker.
        """
        reports = self.reports.values()
        moving = sum(r.sent for r in reports) - sum(r.received for r in reports)
        return max(0, moving) + sum(r.backlog for r in reports)

    def pending_count(self) -> int:
        """Tracked messages without an outcome yet, over every spout task."""
        return sum(sum(r.pending.values()) for r in self.reports.values())

    def holding(self) -> str | None:
        """What a spout holds back though it emits nothing, as last reported (else None).

        Not part of :meth:`idle`: a checkpoint's drain and a stop pause the spouts, so
        what they hold cannot go out before those end; an until-idle run waits for it.
        """
        return next(filter(None, (r.holding for r in self.reports.values())), None)

    def spouts_dry_since(self) -> float | None:
        """Since when (monotonic) every spout has been dry, as last reported; else None.

        See :meth:`SpoutTask.dry_since`: an until-idle run's grace counts from here.
        """
        if self.restarting or len(self.reports) < self.engine.workers:
            return None
        since = [t for worker in self.reports if (t := self._dry_at.get(worker)) is not None]
        return max(since) if len(since) == len(self.reports) else None

    def idle(self, at_once: bool = False) -> bool:
        """No tuple waiting or moving anywhere, and the spouts emit nothing.

        Read from the workers' counters, Mattern's way: two rounds of probes, each
        answered at the end of a worker's turn, that find every worker with nothing
        waiting, as many tuples received as sent overall, and the same counters
        (tuples handled, emitted, sent, received) both times, and the spouts' emits as
        the previous verdict found them: a slow source's tuple, done between two
        verdicts, is seen there, not missed by probes that each fell between its tuples
        (a tick bolt's ticks move the other counters between verdicts, and are no
        work). Never while the workers are lost or starting again. Pending trees do not
        count (they wait for a timeout); the run loop checks them apart. Probes are at
        most every 50 ms on the wall clock; with simulated time, or ``at_once``, on every
        call: a stop's drain asks at once, its spouts deactivated before the probes reach
        their workers (on the same socket), so no slow source can emit between them.
        """
        if self.restarting:
            return False
        when, said = self._idle_at
        if not (self.simulated or at_once) and time.monotonic() - when < IDLE_PROBE_SECS:
            return said
        said = self._probed_quiet()
        self._idle_at = (time.monotonic(), said)
        return said

    def _forget_idle(self) -> None:
        """Drop the verdict :meth:`idle` reuses: a command changed what the workers do.

        A stop's drain once read "idle, nothing pending" from a verdict taken before a
        spout's last emit, and failed that tree at once.
        """
        self._idle_at = (0.0, False)
        self._quiet_counters = None

    def _probed_quiet(self) -> bool:
        if self.killed or self._failure or len(self.reports) < self.engine.workers:
            return False
        self._send_commands()  # what was fed meanwhile goes out before the probes
        rounds = []
        for _ in range(2):
            answers, arrived = self.engine.probe(PROBE_TIMEOUT_SECS)
            for report in arrived:
                self.take_report(report)
            if len(answers) < self.engine.workers:
                return False
            counters = {
                w: (r.sent, r.received, r.backlog, r.handled, r.emitted) for w, r in answers.items()
            }
            quiet = all(c[2] == 0 for c in counters.values()) and sum(
                c[0] for c in counters.values()
            ) == sum(c[1] for c in counters.values())
            if not quiet:
                return False
            rounds.append(counters)
        emitted = {w: c[4] for w, c in rounds[1].items()}  # ticks do not move these
        previous, self._quiet_counters = self._quiet_counters, emitted
        return rounds[0] == rounds[1] and emitted == previous

    def busy_with(self) -> str:
        """What keeps the topology from being idle, in words."""
        holding = self.holding()
        return f"{self.in_flight} tuple(s) in flight, {self.pending_count()} msg id(s) pending" + (
            f"; {holding}" if holding else ""
        )

    def calling(self) -> tuple[str, Any] | None:
        """No user call runs on the driver in this mode."""
        return None

    def kill(
        self,
        max_steps: int | None = None,
        drain_secs: float | None = None,
        *,
        wait_pending: bool = False,
        progress: Callable[[], None] | None = None,
    ) -> None:
        """Deactivate, let in-flight tuples drain, fail what is still pending, close.

        ``progress`` is called between the drain's steps (the live table's countdown).

        As the superstep runtime's: the drain lasts until nothing is in flight (with
        ``wait_pending``, also until no tracked message is pending) or ``drain_secs``
        wall seconds (``max_steps`` has no meaning here). What is still pending then
        fails back to its spout with reason ``shutdown``, in the worker that holds the
        spout, before the spouts are closed and the bolts cleaned up.
        """
        if self.killed:
            return
        self.deactivate()
        deadline = time.monotonic() + (DRAIN_SECS if drain_secs is None else drain_secs)
        self.draining_until = deadline
        windows = [
            task
            for bolt in self.plan.topology.bolts
            if is_windowed(bolt.obj)
            for task in self.plan.component_tasks(bolt.component_id)
        ]
        verdicts = 0
        while time.monotonic() < deadline:
            self.step(0.0 if verdicts < QUICK_VERDICTS else None)  # the probes bring reports
            if progress is not None:
                progress()
            if self.restarting:  # the workers are lost: nothing is left to drain
                break
            idle = self.idle(at_once=verdicts < QUICK_VERDICTS)
            verdicts += 1
            if idle and not (wait_pending and self.pending_count()):
                break
            if idle and windows:  # trees pending: what the windows hold waits for nothing
                self.engine.command((SYSTEM, "stop", -1, windows))
                windows = []
        for report in self.engine.shut_down(SHUTDOWN_SECS):
            self.take_report(report)
        self.engine.close()
        self.killed = True
        self.metrics.close(self.latest_stats.values())

    def workers(self) -> list[dict[str, Any]]:
        """Each worker: where it runs, the tasks it holds, its queue and traffic (the page's)."""
        rows = []
        for index in range(self.engine.workers):
            report = self.reports.get(index)
            tasks = [t for t, w in sorted(self.plan.worker_of.items()) if w == index]
            rows.append(
                {
                    "worker": index,
                    "host": self.engine.hosts.get(index),
                    "pid": self.engine.pids.get(index),
                    "tasks": [f"{self.plan.task_component[t]}:{t}" for t in tasks],
                    "backlog": report.backlog if report else None,
                    **{key: self._carried(index, key, report) for key in CARRIED},
                    **usage_row(
                        report.usage if report else None,
                        self._usage_marks.get(index, (None, None))[0],
                    ),
                }
            )
        return rows

    def spout_stats(self) -> list[TaskStats]:
        """The spout tasks' statistics (their complete latencies feed the history)."""
        return [s for t, s in self.latest_stats.items() if t in self.plan.spout_tasks]

    def _busy_secs(self) -> float:
        return max(1e-9, self.now())

    def _live_secs(self) -> float:
        """How long the workers running now have run (capacity is of their tasks)."""
        return max(1e-9, self.now() - self._launched)

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per-component statistics (Storm UI's names), ``__acker`` included."""
        stats = by_component([*self._lost_stats, *self.latest_stats.values()], self._busy_secs())
        busiest: dict[str, float] = {}  # capacity: of the tasks running now, since they began
        for live in self.latest_stats.values():
            busiest[live.component] = max(busiest.get(live.component, 0.0), live.execute_secs)
        for component, row in stats.items():
            row["capacity"] = round(busiest.get(component, 0.0) / self._live_secs(), 3)
        pending: dict[str, int] = {}
        for report in self.reports.values():
            for task, count in report.pending.items():
                component = self.plan.task_component[task]
                pending[component] = pending.get(component, 0) + count
        for component, row in stats.items():
            spec = self.plan.components.get(component)
            row["kind"] = "acker" if spec is None else "spout" if spec.is_spout else "bolt"
            if row["kind"] == "spout":
                row["pending"] = pending.get(component, 0)
        return stats

    def task_stats(self) -> dict[str, list[dict[str, Any]]]:
        """Per-task statistics by component (Storm UI's executors), ``__acker`` included."""
        rows = by_task(list(self.latest_stats.values()), self._live_secs())
        for report in self.reports.values():
            for task, count in report.pending.items():
                if task in rows:
                    rows[task]["pending"] = count
        grouped: dict[str, list[dict[str, Any]]] = {}
        for task in sorted(rows):
            rows[task]["worker"] = self.plan.worker_of[task]
            grouped.setdefault(rows[task]["component"], []).append(rows[task])
        return grouped
