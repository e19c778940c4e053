"""The driver's side of the continuous mode: placement, the control socket, the reports.

The driver runs no task and sees no tuple. It deals every task (spouts included) over
the workers, binds one ZeroMQ ROUTER socket that every worker connects to, has a
:class:`Launcher` start the workers (a Spark barrier stage, or threads in tests), and
from then on only sends commands (activate, deactivate, shut down) and receives each
worker's :class:`~sparkstorm.engines.continuous.worker.WorkerReport`.
"""

from __future__ import annotations

import logging
import os
import pickle
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import cloudpickle
import zmq

from sparkstorm.config import SPARKSTORM_WATCHDOG_SECS
from sparkstorm.engines.base import SparkFacts
from sparkstorm.engines.continuous.security import Gate, RunKeys
from sparkstorm.engines.continuous.worker import (
    ACTIVATE,
    DEACTIVATE,
    PEERS,
    PROBE,
    SHUTDOWN_NOW,
    Worker,
    WorkerReport,
)
from sparkstorm.engines.user_code import UserCode, user_code
from sparkstorm.errors import SparkStormError
from sparkstorm.state.stores import Sources
from sparkstorm.tasks.log_ring import LogRing
from sparkstorm.tasks.pickling import dumps
from sparkstorm.tasks.spout_task import Failures
from sparkstorm.tasks.task_runner import copy_component
from sparkstorm.tasks.watchdog import Watchdog, blocked_at, blocked_message
from sparkstorm.topology.plan import Plan

log = logging.getLogger(__name__)

BLOCKED = "blocked"
"""A worker's watchdog's message: (BLOCKED, worker, call, secs, host, pid, stack)."""
PLAN = "plan"
"""A starting worker's request for the plan: (PLAN, worker, attempt); the driver answers
with the pickled plan, or an empty frame to a worker of an attempt replaced since."""
START_TIMEOUT_SECS = 120.0
"""How long the workers may take to start and say hello (a barrier stage waits for slots)."""


class WorkersLost(SparkStormError):
    """The workers' stage ended early, or could not start: a worker or its host was lost.

    Its message is one line; ``worker`` is the lost worker's index when known. The run
    may start the workers again (``control/restarts``).
    """

    def __init__(self, reason: str, worker: int | None = None) -> None:
        super().__init__(reason)
        self.worker = worker


@dataclass(frozen=True)
class WorkerSetup:
    """What every worker needs to start: ids' seed, the clock and the driver.

    The plan is not here: a worker asks the driver for it on the control socket (see
    :func:`fetch_plan`), so that the user's components and their data are not pickled
    into Spark's task, copied through the JVM and kept in every worker twice.
    """

    seed: int
    epoch: float
    """Wall time (``time.time()``) of topology time 0."""
    control: str
    """The driver's ROUTER address."""
    workers: int
    attempt: int = 0
    """How many times the stage was started before (ids differ per attempt)."""
    simulated: bool = False
    """Whether time moves only when the driver says so."""
    code: UserCode = field(default_factory=UserCode)
    """The driver's import folders that are not installed packages' (``user_code``)."""
    keys: RunKeys | None = None
    """The run's CURVE keys (see ``security``); None only in tests of the protocol."""
    replays: Sources | None = None
    """Message keys committed already, which the spouts ack instead of emitting (the
    store's, read at each start: see ``committed_sources``)."""
    failures: Failures | None = None
    """What spout tasks' earlier starts left failed for good (a restart takes it on)."""


class Launcher(SparkFacts, Protocol):
    """Starts ``setup.workers`` workers somewhere and watches them."""

    def launch(self, setup: WorkerSetup) -> None:
        """Start the workers (without waiting for them to finish)."""

    def failure(self) -> BaseException | None:
        """Why the workers ended, if they ended with an error; else None."""

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the workers to end."""

    def cancel(self) -> None:
        """Stop the workers now, wherever they are (a call in one blocks)."""

    def slots(self) -> int | None:
        """The task slots the cluster has now (one per worker at most); None: no limit."""


def place(plan: Plan, workers: int, executors: dict[str, int] | None = None) -> None:
    """Deal every task, spouts included, round-robin by task id over ``workers``.

    ``executors`` (Storm's ``rebalance -e component=N``) keeps a component's tasks in N
    workers, its executors: a worker runs the tasks it holds in one loop, as a Storm
    executor runs its tasks in one thread. It is kept on the plan for later placements
    (a restart after a lost worker).
    """
    if executors is not None:
        plan.executors = dict(executors)
    tasks = sorted(plan.spout_tasks + plan.bolt_tasks + plan.acker_tasks)
    plan.workers = max(1, min(workers, len(tasks)))
    plan.worker_of = {t: i % plan.workers for i, t in enumerate(tasks)}
    first = 0
    for component, count in sorted(plan.executors.items()):
        within = max(1, min(count, plan.workers))
        for k, task in enumerate(plan.component_tasks(component)):
            plan.worker_of[task] = (first + k % within) % plan.workers
        first += within


def _pickled_for_workers(plan: Plan) -> list[bytes]:
    """The plan pickled for each worker (:meth:`Plan.for_worker`).

    Each component is whole only where it runs; one that cannot be pickled is named.
    """
    try:
        return [dumps(plan.for_worker(worker)) for worker in range(plan.workers)]
    except Exception:
        for cid, spec in plan.components.items():  # the one that cannot travel, named
            copy_component(spec.obj, cid)
        raise


def run_worker(setup: WorkerSetup, index: int, host: str, log_ring: LogRing | None = None) -> None:
    """The body of one worker: bind, say hello, connect to the peers, prepare, loop, close.

    The driver hands out every worker's address once all have said hello: Spark's
    ``BarrierTaskContext.allGather`` would do it too, but its task thread looks for the
    answer once a second (``Thread.sleep(1000)``), a second added to every start and
    restart. A watchdog reports a user call that blocks. ``log_ring`` keeps the process's
    log records for the worker's reports.
    """
    setup.code.install()  # before the plan: its classes may come from the user's folders
    context: zmq.Context[Any] = zmq.Context()
    plan = fetch_plan(setup, index, context)
    if plan is None:  # an attempt replaced since it was submitted: nothing to run
        context.term()
        return
    gate = Gate(context, setup.keys) if setup.keys is not None else None
    worker = Worker(
        plan,
        index,
        setup.seed,
        setup.epoch,
        context,
        setup.attempt,
        setup.simulated,
        setup.replays,
        setup.keys,
        setup.failures,
    )
    worker.log_ring = log_ring
    report = _blocked_reporter(setup, index, context, threading.get_ident())
    try:
        with Watchdog(worker.call_under_way, plan.conf[SPARKSTORM_WATCHDOG_SECS], report):
            worker.hello(worker.bind(host), setup.control)
            peers = worker.await_peers(START_TIMEOUT_SECS)
            if peers is None:
                return
            worker.connect(peers)
            worker.prepare()
            worker.run()
    finally:
        worker.close()
        if gate is not None:
            gate.close()
        context.term()


def fetch_plan(setup: WorkerSetup, index: int, context: zmq.Context[Any]) -> Plan | None:
    """The plan, asked of the driver; None if this worker's attempt was replaced since.

    The socket is the run's (CurveZMQ, the run's keys): the driver's answer is
    authenticated before it is unpickled.
    """
    with context.socket(zmq.DEALER) as dealer:
        dealer.setsockopt(zmq.LINGER, 0)
        if setup.keys is not None:
            setup.keys.join(dealer)
        dealer.connect(setup.control)
        dealer.send(pickle.dumps((PLAN, index, setup.attempt)))
        if not dealer.poll(int(START_TIMEOUT_SECS * 1000)):
            msg = f"worker {index}: the driver sent no plan in {START_TIMEOUT_SECS:.0f} s"
            raise TimeoutError(msg)
        payload = dealer.recv(copy=False)
    if len(payload) == 0:
        return None
    plan: Plan = cloudpickle.loads(payload.buffer)
    return plan


def _blocked_reporter(
    setup: WorkerSetup, index: int, context: zmq.Context[Any], thread: int
) -> Callable[[str, float], None]:
    """What a worker's watchdog calls: tell the driver, on a socket of the watchdog's own."""

    def report(call: str, secs: float) -> None:
        call, stack = blocked_at(call, sys._current_frames().get(thread))
        message = (BLOCKED, index, call, secs, socket.gethostname(), os.getpid(), stack)
        with context.socket(zmq.DEALER) as dealer:
            dealer.setsockopt(zmq.LINGER, 2000)
            if setup.keys is not None:
                setup.keys.join(dealer)
            dealer.connect(setup.control)
            dealer.send(pickle.dumps(message))

    return report


class ContinuousEngine:
    """The continuous mode's engine, on the driver: start, command, report, stop."""

    def __init__(self, launcher: Launcher, host: str, workers: int) -> None:
        self.launcher, self.host, self.workers = launcher, host, workers
        self._context: zmq.Context[Any] | None = None
        self._router: Any = None
        self._plan_bytes: list[bytes] = []
        """The plan as each worker asks for it (:data:`PLAN`), pickled at each start."""
        self._identities: dict[int, bytes] = {}
        self.pids: dict[int, int] = {}
        """Worker -> the process id it runs in (its hello says)."""
        self.hosts: dict[int, str] = {}
        """Worker -> the host it runs on (its hello says)."""
        self.finished: set[int] = set()
        self._addresses: dict[int, str] = {}
        """Worker -> the address its peers send to (its hello says)."""
        self._heard: dict[int, float] = {}
        """Worker -> when (``time.monotonic()``) it last sent anything."""
        self.timeout_secs = 30.0
        """How long a worker may send nothing before :meth:`silent` names it."""
        self._probes = 0
        self.blocked: str | None = None
        """A user call a worker's watchdog reported blocked, until that worker reports again."""
        self._blocked_in: int | None = None

    name = "spark"

    @property
    def master(self) -> str | None:
        """The Spark master the workers run on."""
        return self.launcher.master

    @property
    def ui_url(self) -> str | None:
        """The Spark UI's address, when one runs."""
        return self.launcher.ui_url

    @property
    def log_file(self) -> Path | None:
        """Where Spark's own log goes."""
        return self.launcher.log_file

    def interrupt(self) -> None:
        """A call blocks a worker, and the run stops: cancel the workers' stage."""
        if self.blocked is not None:
            self.launcher.cancel()

    busy = False
    """Nothing runs on the driver's side between two calls (the superstep engine's flag)."""

    def start(
        self,
        plan: Plan,
        seed: int,
        epoch: float,
        *,
        simulated: bool = False,
        replays: Sources | None = None,
    ) -> None:
        """Place the tasks, launch the workers, and wait until every one has said hello."""
        place(plan, self.workers)
        self.workers = plan.workers
        self._plan = plan
        self._plan_bytes = _pickled_for_workers(plan)
        self._context = zmq.Context()
        keys = RunKeys.new()
        self._gate = Gate(self._context, keys)
        self._router = self._context.socket(zmq.ROUTER)
        self._router.setsockopt(zmq.LINGER, 0)
        keys.serve(self._router)
        port = self._router.bind_to_random_port(f"tcp://{self.host}")
        control = f"tcp://{self.host}:{port}"
        self._setup = WorkerSetup(
            seed,
            epoch,
            control,
            self.workers,
            simulated=simulated,
            code=user_code(),
            keys=keys,
            replays=replays,
        )
        try:
            self._launch()
        except WorkersLost:
            raise  # the run may start them again: the control socket stays
        except BaseException:
            self.close()
            raise

    @property
    def attempt(self) -> int:
        """How many times the workers were started before the current start."""
        return self._setup.attempt

    def relaunch(
        self,
        workers: int,
        replays: Sources | None = None,
        executors: dict[str, int] | None = None,
        failures: Failures | None = None,
    ) -> None:
        """Start the workers again as ``workers`` workers, the tasks placed over them anew.

        After the stage was lost (a worker died), or a graceful :meth:`shut_down` (a
        rebalance). A new stage attempt: tasks are prepared and spouts opened again, ids
        come from sources of the new attempt; what lost workers held is gone, as when a
        Storm worker dies, and sources redeliver what was never acked. The spout tasks
        take on the ``failures`` their earlier starts left, which a replay may settle.
        """
        self._stop_survivors()
        place(self._plan, workers, executors)
        self.workers = self._plan.workers
        self._plan_bytes = _pickled_for_workers(self._plan)
        self._setup = replace(
            self._setup,
            workers=self.workers,
            attempt=self._setup.attempt + 1,
            replays=replays,
            failures=failures,
        )
        self._identities, self.pids, self.hosts, self.finished = {}, {}, {}, set()
        self._addresses = {}
        self._heard = {}
        self._launch()

    def _stop_survivors(self) -> None:
        """Stop what still runs of the lost attempt, so that no spout task runs twice.

        Spark kills a failed barrier stage's tasks itself; worker threads are not killed.
        """
        self.command(SHUTDOWN_NOW)
        self.launcher.join(10.0)

    def _launch(self) -> None:
        self.launcher.launch(self._setup)
        deadline = time.monotonic() + START_TIMEOUT_SECS
        while len(self._identities) < self.workers:
            failure = self.launcher.failure()
            if failure is not None:
                worker = failure.worker if isinstance(failure, WorkersLost) else None
                msg = f"failed to start: {failure}"
                raise WorkersLost(msg, worker) from failure
            slots = self.launcher.slots() if self._setup.attempt else None
            if slots and slots < self.workers:  # a host lost while the stage waited
                self.launcher.cancel()
                msg = (
                    f"failed to start: the cluster has {slots} task slots left for "
                    f"{self.workers} workers"
                )
                raise WorkersLost(msg)
            if time.monotonic() > deadline:
                msg = (
                    f"{len(self._identities)} of {self.workers} continuous workers started "
                    f"in {START_TIMEOUT_SECS:.0f} s; does the cluster have {self.workers} "
                    f"free task slots? (sparkstorm.spark.partitions sets how many are needed)"
                )
                raise WorkersLost(msg)
            self._receive(0.05)  # hellos only: a worker reports once it has its peers
        peers = [self._addresses[i] for i in range(self.workers)]
        self.command((PEERS, peers))

    def command(self, command: Any, worker: int | None = None) -> None:
        """Send ``command`` to every worker (or to ``worker``); each takes it in order."""
        message = pickle.dumps(command)
        for index, identity in self._identities.items():
            if worker is None or index == worker:
                self._router.send_multipart([identity, message])

    def probe(self, timeout: float) -> tuple[dict[int, WorkerReport], list[WorkerReport]]:
        """Ask every worker for a report at the end of its current turn; wait for them.

        Returns the answers by worker and every report that arrived meanwhile (answers
        included), in order. A worker that does not answer within ``timeout`` is missing.
        """
        self._probes += 1
        seq = self._probes
        self.command((PROBE, seq))
        answers: dict[int, WorkerReport] = {}
        arrived: list[WorkerReport] = []
        deadline = time.monotonic() + timeout
        while len(answers) < len(self._identities) and time.monotonic() < deadline:
            for report in self._receive(0.05):
                arrived.append(report)
                if report.probe == seq:
                    answers[report.worker] = report
            if self.launcher.failure() is not None or self.finished or self.silent():
                break  # a worker that stopped, or fell silent, answers no probe
        return answers, arrived

    def activate(self) -> None:
        """Start the spouts' ``next_tuple`` calls."""
        self.command(ACTIVATE)

    def deactivate(self) -> None:
        """Stop the spouts' ``next_tuple`` calls; tuples in flight go on."""
        self.command(DEACTIVATE)

    def reports(self, timeout: float) -> list[WorkerReport]:
        """The reports that arrive within ``timeout`` seconds (at least one wait)."""
        return self._receive(timeout)

    def _receive(self, timeout: float) -> list[WorkerReport]:
        reports: list[WorkerReport] = []
        wait_ms = int(timeout * 1000)
        while self._router.poll(wait_ms):
            wait_ms = 0
            identity, payload = self._router.recv_multipart()
            message = pickle.loads(payload)
            if isinstance(message, tuple) and message[0] == "hello":
                self._identities[message[1]] = identity
                self.pids[message[1]], self.hosts[message[1]] = message[2], message[3]
                self._addresses[message[1]] = message[4]
            elif isinstance(message, tuple) and message[0] == PLAN:
                current = message[2] == self._setup.attempt
                plan = self._plan_bytes[message[1]] if current else b""
                self._router.send_multipart([identity, plan])
            elif isinstance(message, tuple) and message[0] == BLOCKED:
                self._on_blocked(*message[1:])
            elif isinstance(message, WorkerReport):
                if self._identities.get(message.worker) != identity:
                    continue  # a worker of a lost attempt, on its way out
                self._heard[message.worker] = time.monotonic()
                if message.worker == self._blocked_in:  # it reports between calls only
                    self.blocked = self._blocked_in = None
                reports.append(message)
                if message.final:
                    self.finished.add(message.worker)
        return reports

    def silent(self) -> tuple[int, float] | None:
        """A worker that has sent nothing for :attr:`timeout_secs`, and for how long; or None.

        A worker reports every few hundred milliseconds once its tasks are prepared, even
        while idle; one whose user call blocks (``prepare`` included) is known blocked (its
        watchdog said so) and is not silent. Silence is what a host that is cut off,
        frozen or gone looks like from here, long before Spark gives up on its executor
        (``spark.network.timeout``, 120 s).
        """
        now = time.monotonic()
        for worker, heard in sorted(self._heard.items()):
            quiet = now - heard > self.timeout_secs
            if quiet and worker != self._blocked_in and worker not in self.finished:
                return worker, now - heard
        return None

    def _on_blocked(
        self, worker: int, call: str, secs: float, host: str, pid: int, stack: str
    ) -> None:
        self.blocked, self._blocked_in = call, worker
        where = f" in continuous worker {worker} (Python process {pid} on {host})"
        at = f"; it is at:\n{stack}" if stack else ""
        log.warning("%s%s", blocked_message(call, secs, where), at)

    def shut_down(self, timeout: float) -> list[WorkerReport]:
        """Ask every worker to shut down; return the reports until the last final one."""
        self.command(SHUTDOWN_NOW)
        reports: list[WorkerReport] = []
        deadline = time.monotonic() + timeout
        while len(self.finished) < len(self._identities) and time.monotonic() < deadline:
            reports += self._receive(0.1)
            if self.launcher.failure() is not None:
                break
        self.launcher.join(max(0.0, deadline - time.monotonic()))
        return reports

    def close(self) -> None:
        """Close the control socket."""
        if self._context is not None:
            self._router.close(linger=0)
            self._gate.close()
            self._context.term()
            self._context = None
