"""A continuous worker: its share of spout, bolt and acker tasks, for the life of a run.

Storm's worker process, in one Python thread. A worker runs in a Spark barrier task (or,
in tests, a thread) and loops: take the driver's commands, take the frames its peers
sent, tick, run each bolt task over the tuples waiting for it, ask the spouts for more,
send what was emitted, report. Tuples between tasks of one worker are handed over in
memory; tuples for another worker's tasks are batched per destination worker and sent
over one ZeroMQ socket per peer, so per (sender task, receiver task) they arrive in the
order they were emitted (Storm's FIFO). A frame goes out when it holds
:data:`FRAME_TUPLES` tuples or its first tuple has waited :data:`FLUSH_SECS`.

Backpressure, not buffering: sends never block (a blocked send in a loop that also
receives could deadlock two workers); a frame a peer cannot take yet waits here, and
while the worker's backlog (tuples waiting to run plus waiting to be sent) is over
:data:`MAX_BACKLOG`, its spouts are not asked for more. ``topology.max.spout.pending``
bounds each spout task's tracked trees as in Storm. Nothing is dropped, but by a
rollback: its frames carry the worker's *generation*, and a frame sent before the
rollback reached every worker is dropped where it arrives (see ``control/continuous``).

Checkpoints of stateful bolts are aligned by draining: the driver pauses the spouts
(``pause``) until nothing is in flight anywhere, then sends ``prepare`` (the spouts seal
their pending trees; the stateful tasks and ackers get the instruction before any
tuple emitted after it), then ``commit``, and resumes.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import platform
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import zmq

from sparkstorm._types import SHUTDOWN, FailReason
from sparkstorm.config import (
    SPARKSTORM_GC_GEN0_THRESHOLD,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE,
)
from sparkstorm.engines.continuous.security import RunKeys
from sparkstorm.engines.rows import RowCodec, extra_rows
from sparkstorm.errors import SparkStormError
from sparkstorm.reliability.base_collector import ReportedError
from sparkstorm.reliability.debug import apply_debug
from sparkstorm.reliability.ids import id_source
from sparkstorm.state.stores import Sources
from sparkstorm.tasks.committed_sources import CommittedSources, sealed_keys
from sparkstorm.tasks.cpu_profile import CpuProfile
from sparkstorm.tasks.gc_tuning import fewer_collections
from sparkstorm.tasks.log_levels import LogLevels
from sparkstorm.tasks.log_ring import LogRing
from sparkstorm.tasks.metrics import TaskStats
from sparkstorm.tasks.process_usage import ProcessUsage, usage
from sparkstorm.tasks.spout_task import Failures, SpoutTask, all_dry_since
from sparkstorm.tasks.stacks import thread_stacks
from sparkstorm.tasks.task_runner import BoltTask
from sparkstorm.tasks.task_state import snapshot
from sparkstorm.tasks.ticks import due, tickers_for
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.row_batch import RowBatch
from sparkstorm.topology.tuple import Row, Tuple, checkpoint_tuple

log = logging.getLogger(__name__)

FRAME_TUPLES = 2_000
"""A frame to a peer goes out once it holds this many tuples..."""
FLUSH_SECS = 0.0003
"""... or once its first tuple has waited this long (at 1 ms, the Arrow word count's
complete latency p99 at 1,000,000 rows/s offered was 11-12 ms; at 0.3 ms, 8.7-8.9 ms,
with the same throughput)."""
MAX_BACKLOG = 20_000
"""Tuples waiting in a worker (to run or to be sent) above which its spouts pause and it
stops reading its socket."""
HWM_FRAMES = 8
"""Frames ZeroMQ may queue per peer on each side before a send must wait here: with
:data:`FRAME_TUPLES` and :data:`MAX_BACKLOG`, what a slow bolt can have waiting for it is
bounded (~70,000 tuples), well within a message timeout at a few thousand tuples/s."""
SPOUT_CALLS = 200
"""``next_tuple`` calls per spout task per turn of the loop."""
REPORT_SECS = 0.25
"""How often a worker reports its statistics to the driver."""

# commands from the driver: a name, or (name, argument...)
ACTIVATE, DEACTIVATE, SHUTDOWN_NOW = "activate", "deactivate", "shutdown"
PEERS = "peers"
"""``(PEERS, addresses)``: every worker's data address, by index; the driver's first
command, once every worker has said hello."""
TIME, PROBE, FEED, EPOCH = "time", "probe", "feed", "epoch"
PAUSE = "pause"
"""``(PAUSE, flag)``: stop or resume asking the spouts, without their ``deactivate``."""
SYSTEM = "system"
"""``(SYSTEM, action, txid, tasks)``: a checkpoint instruction to the worker's ``tasks``
(``prepare`` also seals its spouts' pending trees, ``commit`` acks them)."""
ROLL_BACK = "roll_back"
"""``(ROLL_BACK, txid, tasks, generation)``: drop what is in flight here, pause the
spouts, take the new generation, roll ``tasks`` back to ``txid``."""
FAIL_PENDING = "fail_pending"
"""``(FAIL_PENDING, reason)``: fail the spouts' pending trees and resume them (every
worker has taken the rollback's generation)."""
DEBUG = "debug"
"""``(DEBUG, shares)``: note this share of each component's calls (Storm UI's Debug)."""
LOG_LEVEL = "log_level"
"""``(LOG_LEVEL, logger, level, secs)``: Storm UI's "Change log level", in this worker."""
PROFILE = "profile"
"""``(PROFILE, secs)``: profile the worker's loop for ``secs``; the text in a report."""
STACKS = "stacks"
"""``(STACKS,)``: a dump of the worker's threads, in the report at the end of this turn."""


@runtime_checkable
class DriverFed(Protocol):
    """A spout fed from the driver's process (``testing.FeederSpout``, Storm's registry).

    In a worker, its copy keeps a state of its own (:meth:`detach`); the driver forwards
    what the test feeds (:meth:`take`), and the worker reports back what happened
    (:meth:`outcomes`), which the driver applies to the test's own object.
    """

    @property
    def feeder_key(self) -> str:
        """The key its copies share."""

    def detach(self) -> None:
        """Keep a state of its own (in a worker, whatever the process)."""

    def take(self, items: list[Any]) -> None:
        """Queue items the driver forwarded."""

    def outcomes(self) -> Any:
        """What happened since the last call (acks, fails, calls), and forget it."""

    def record(self, outcomes: Any) -> None:
        """On the driver: apply what a worker's copy reported (see :meth:`outcomes`)."""

    def handed_over(self) -> list[Any]:
        """On the driver: the items fed since the last call, to forward to a worker."""


@dataclass(frozen=True)
class WorkerReport:
    """What a worker tells the driver, every :data:`REPORT_SECS` and when it stops."""

    worker: int
    stats: list[TaskStats]
    pending: dict[int, int]
    """Spout task -> tracked trees pending."""
    errors: list[ReportedError]
    debug: list[str]
    sent: int
    """Tuples sent to other workers since the start."""
    received: int
    """Tuples received from other workers since the start (dropped ones included)."""
    backlog: int
    """Tuples waiting to run or to be sent now."""
    emitted: int
    """Tuples the spouts emitted since the start."""
    turns: int
    handled: int = 0
    """Tuples run by bolts and outcomes handed to spouts since the start."""
    fed: dict[str, Any] = field(default_factory=dict)
    """Driver-fed spouts' outcomes since the last report, by feeder key."""
    probe: int = -1
    """The probe this report answers (-1: a periodic report)."""
    failure: BaseException | None = None
    """What stopped the worker, when it stopped on an error (a final report)."""
    captured: list[tuple[str, str, list[Any]]] = field(default_factory=list)
    """(component, stream, values) of the captured components' emits since the last report."""
    final: bool = False
    dropped: int = 0
    """Tuples rollbacks dropped here since the start."""
    sealed: Sources | None = None
    """The message keys of the trees the spouts sealed at a ``prepare`` (see
    ``committed_sources``), in the report after it."""
    usage: ProcessUsage | None = None
    """The worker's process: memory, CPU time, when the worker started."""
    stacks: str | None = None
    """A dump of the worker process's threads, when the driver asked for one."""
    cpu_profile: str | None = None
    """A CPU profile of the worker's loop, once the one the driver asked for is done."""
    log_lines: list[str] = field(default_factory=list)
    """The worker's Python log records since the last report (Spark workers only)."""
    holding: str | None = None
    """What a spout here holds back though it emits nothing (a ``HoldsWork``), in words.

    Apart from :attr:`backlog`: a checkpoint's drain pauses the spouts, so what they
    hold cannot go out before it ends and must not count as work in flight there; an
    until-idle run waits for it.
    """
    dry_secs: float | None = math.inf
    """How long every spout here has been dry (``SpoutTask.dry_since``), None while one
    is not; infinite where no spout runs."""


@dataclass
class _Peer:
    """Tuples bound for one other worker, and frames it has not taken yet."""

    socket: Any
    rows: list[Row] = field(default_factory=list)
    since: float = 0.0
    frames: deque[tuple[bytes, int, int]] = field(default_factory=deque)
    """Frames not taken yet: (frame, tuples in it, rows its record batches add)."""
    rows_extra: int = 0
    """Rows the record batches among ``rows`` hold beyond one each."""
    extra: int = 0
    """Rows the record batches bound for the peer hold beyond one each (rows and frames)."""


def _frame_sized(rows: list[Row], extra: int) -> list[tuple[list[Row], int]]:
    """``rows`` in pieces of at most ``FRAME_TUPLES`` rows, a record batch weighing its rows.

    A frame is read whole: one full of record batches would put many times
    ``MAX_BACKLOG`` rows in its receiver's backlog at once. Tuples go in one piece.
    """
    if not extra:
        return [(rows, 0)]
    pieces: list[tuple[list[Row], int]] = []
    piece: list[Row] = []
    weight = piece_extra = 0
    for row in rows:
        tup = row[1]
        more = tup.num_rows - 1 if tup.__class__ is RowBatch else 0
        if piece and weight + 1 + more > FRAME_TUPLES:
            pieces.append((piece, piece_extra))
            piece, weight, piece_extra = [], 0, 0
        piece.append(row)
        weight += 1 + more
        piece_extra += more
    pieces.append((piece, piece_extra))
    return pieces


class Worker:
    """Worker ``index`` of ``workers``: runs the tasks the placement gives it."""

    def __init__(
        self,
        plan: Plan,
        index: int,
        seed: int,
        epoch: float,
        context: zmq.Context[Any],
        attempt: int = 0,
        simulated: bool = False,
        replays: Sources | None = None,
        keys: RunKeys | None = None,
        failures: Failures | None = None,
    ) -> None:
        self.plan, self.index, self.seed, self.epoch = plan, index, seed, epoch
        self.attempt = attempt
        self.simulated = simulated
        """Time moves only when the driver says (``LocalCluster(simulated_time=True)``)."""
        self.try_serialize = bool(plan.conf[TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE])
        """Pickle what would not need it (tuples between local tasks, bolts' state), so a
        test finds what could not travel or be checkpointed."""
        self.sim_now = 0.0
        self.context = context
        self.keys = keys
        """The run's CURVE keys: only the run's workers and driver talk to this one."""
        self.codec = RowCodec(plan)
        mine = sorted(t for t, worker in plan.worker_of.items() if worker == index)
        # the plan is this worker's own copy: a component's last task here takes its object
        last = {plan.task_component[t]: t for t in mine}
        self.spouts = {
            t: SpoutTask(plan, t, seed, take=last[plan.task_component[t]] == t)
            for t in mine
            if t in plan.spout_tasks
        }
        self.bolts = {
            t: BoltTask(plan, t, seed, take=last[plan.task_component[t]] == t)
            for t in mine
            if t not in plan.spout_tasks
        }
        self.inbox: dict[int, list[Tuple]] = {t: [] for t in self.bolts}
        self._took: dict[int, float] = dict.fromkeys(self.bolts, 0.0)
        """Bolt task -> how long its last run took. Before one that took longer than
        :data:`FLUSH_SECS` runs again, what waits for other workers goes out: a Trident
        commit tuple for a remote partition waited for the local partition's whole write."""
        self.inbox_extra: dict[int, int] = dict.fromkeys(self.bolts, 0)
        """Rows the record batches in each inbox hold beyond one each (the backlog's)."""
        self.tickers = tickers_for(plan, plan.conf, set(self.bolts))
        self.active = False
        self.paused = False
        """A checkpoint's drain or a rollback: the spouts are not asked."""
        self.generation = 0
        """Rollbacks so far: a frame from an earlier generation is dropped on arrival."""
        self.dropped = 0
        """Tuples dropped by rollbacks (here, or on arrival from an earlier generation)."""
        self._sealed: Sources | None = None
        self.stopped = False
        self.turns = 0
        self.started = time.time()
        self.sent = self.received = 0
        self.queued = 0
        self.peers: dict[int, _Peer] = {}
        self.errors: list[ReportedError] = []
        self.debug: list[str] = []
        self.captured: list[tuple[str, str, list[Any]]] = []
        capture = plan.captured_components()
        self._capturing = {t for t in self.bolts if plan.task_component[t] in capture}
        for spout in self.spouts.values():
            if spout.component_id in capture:
                spout.collector.capture(self.captured)
        self._next_report = 0.0
        self._unread = False
        self.handled = 0
        self._probe = -1
        self._stacks: str | None = None
        self._cpu: CpuProfile | None = None
        self.log_levels = LogLevels()
        self.log_ring: LogRing | None = None
        """Where the worker's process keeps its log records for the reports, if it does."""
        self._cpu_text: str | None = None
        self.fed: dict[str, DriverFed] = {}
        for spout in self.spouts.values():
            if isinstance(spout.spout, DriverFed):
                spout.spout.detach()
                self.fed.setdefault(spout.spout.feeder_key, spout.spout)
        for task, failed in (failures or {}).items():  # an earlier start's
            if task in self.spouts:
                self.spouts[task].carry_failures(*failed)
        if replays:  # a restart: messages committed already are acked, not emitted
            sources = CommittedSources(replays, plan.conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS])
            for spout in self.spouts.values():
                spout.skip_committed(sources)
        # one id source per task for the run: the ids' seed, the stage's attempt, the task
        self.ids = {t: id_source(seed, -2 - attempt, t) for t in [*self.spouts, *self.bolts]}
        self.receiver = context.socket(zmq.PULL)
        self.control = context.socket(zmq.DEALER)
        self.poller = zmq.Poller()
        self.poller.register(self.receiver, zmq.POLLIN)
        self.poller.register(self.control, zmq.POLLIN)

    # -- set-up -------------------------------------------------------------------------
    def bind(self, host: str) -> str:
        """Bind the socket peers send to, on ``host``; return its address."""
        self.receiver.setsockopt(zmq.RCVHWM, HWM_FRAMES)
        if self.keys is not None:
            self.keys.serve(self.receiver)
        port = self.receiver.bind_to_random_port(f"tcp://{host}")
        return f"tcp://{host}:{port}"

    def hello(self, address: str, control: str) -> None:
        """Connect to the driver's control socket and say hello, with our data address."""
        self.control.setsockopt(zmq.IDENTITY, f"worker-{self.attempt}-{self.index}".encode())
        self.control.setsockopt(zmq.LINGER, 2000)
        if self.keys is not None:
            self.keys.join(self.control)
        self.control.connect(control)
        hello = ("hello", self.index, os.getpid(), platform.node(), address)
        self.control.send(pickle.dumps(hello))

    def await_peers(self, timeout: float) -> list[str] | None:
        """Every worker's address, sent by the driver once all have said hello.

        None if the driver shuts the run down first (another worker failed to start).
        """
        if not self.control.poll(int(timeout * 1000)):
            msg = f"worker {self.index}: no word from the driver {timeout:.0f} s after hello"
            raise TimeoutError(msg)
        command = pickle.loads(self.control.recv())
        if isinstance(command, tuple) and command[0] == PEERS:
            return list(command[1])
        return None

    def connect(self, peers: list[str]) -> None:
        """Connect to every other worker's address."""
        for i, address in enumerate(peers):
            if i != self.index:
                socket = self.context.socket(zmq.PUSH)
                socket.setsockopt(zmq.SNDHWM, HWM_FRAMES)
                socket.setsockopt(zmq.LINGER, 0)
                if self.keys is not None:
                    self.keys.join(socket)
                socket.connect(address)
                self.peers[i] = _Peer(socket)

    def prepare(self) -> None:
        """Prepare the bolt tasks and open the spouts (Storm does both as a worker starts)."""
        for task in self.bolts.values():
            task.prepare()
        for spout in self.spouts.values():
            spout.open()

    def call_under_way(self) -> tuple[str, Any] | None:
        """The user call running in this worker now, with a progress marker (the watchdog's)."""
        tasks: list[SpoutTask | BoltTask] = [*self.spouts.values(), *self.bolts.values()]
        for task in tasks:
            seen = task.call_under_way()
            if seen is not None:
                return seen
        return None

    # -- the loop -----------------------------------------------------------------------
    def run(self) -> None:
        """Loop until the driver says to shut down; then fail what is pending, clean up."""
        wait = 0
        try:
            with fewer_collections(self.plan.conf[SPARKSTORM_GC_GEN0_THRESHOLD]):
                while not self.stopped:
                    worked = self.turn(wait)
                    # nothing ran: wait for a frame or a command, 1 ms at most (ZeroMQ's
                    # poll counts whole ms), unless tuples wait to be sent
                    waiting = worked or any(peer.rows for peer in self.peers.values())
                    wait = 0 if waiting else 1
        except Exception as exc:  # a mistake in the topology: the driver raises it
            log.exception("continuous worker %d stopped", self.index)
            self._report(final=True, failure=exc)
            return
        self._shut_down()

    def turn(self, wait_ms: int = 0) -> bool:
        """One turn of the loop, after waiting up to ``wait_ms`` for input.

        Returns whether it ran or emitted anything (tuples only waiting to be flushed do
        not count: the next turn waits for input, at most until their flush is due).
        """
        ready = dict(self.poller.poll(wait_ms))
        if self.control in ready:
            self._obey()
        now = self.now()
        self.turns += 1
        got = self._receive(now) if self.receiver in ready or self._unread else 0
        ticks, spout_ticks = due(self.tickers, now)
        for _ in range(spout_ticks):
            for spout in self.spouts.values():
                spout.tick()
        self._route(ticks, now)
        ran = self._run_bolts(now)
        emitted = self._run_spouts(now)
        self._flush()
        if self._probe >= 0 or time.monotonic() >= self._next_report:
            self._report()
        return bool(got or ran or emitted)

    def _obey(self) -> None:
        while self.control.poll(0):
            command = pickle.loads(self.control.recv())
            if command == ACTIVATE and not self.active:
                self.active = True
                for spout in self.spouts.values():
                    spout.guarded(spout.spout.activate)
            elif command == DEACTIVATE and self.active:
                self.active = False
                for spout in self.spouts.values():
                    spout.guarded(spout.spout.deactivate)
            elif command == SHUTDOWN_NOW:
                self.stopped = True
            elif command[0] == TIME:
                self.sim_now = command[1]
            elif command[0] == EPOCH:  # topology time starts once every worker is up
                self.epoch = command[1]
            elif command[0] == PROBE:  # answered at the end of this turn
                self._probe = command[1]
            elif command[0] == FEED:
                self.fed[command[1]].take(command[2])
            elif command[0] == PAUSE:
                self.paused = command[1]
            elif command[0] == SYSTEM:
                self._system(*command[1:])
            elif command[0] == ROLL_BACK:
                self._roll_back(*command[1:])
            elif command[0] == FAIL_PENDING:
                self._fail_pending(*command[1:])
            elif command[0] == DEBUG:
                apply_debug(self.spouts, command[1])
                apply_debug(self.bolts, command[1])
            elif command[0] == LOG_LEVEL:
                self.log_levels.set(*command[1:])
            elif command[0] == PROFILE:
                self._cpu = CpuProfile(command[1])
            elif command[0] == STACKS:  # sent at the end of this turn
                self._stacks, self._next_report = thread_stacks(), 0.0

    def _system(self, action: str, txid: float, tasks: list[int]) -> None:
        """A checkpoint instruction: to the local ``tasks``, ahead of what waits for them."""
        if action == "prepare":  # the drain left nothing waiting: no tuple is before it
            for spout in self.spouts.values():
                spout.seal()
            self._sealed = sealed_keys(list(self.spouts.values()))
        elif action == "commit":
            for spout in self.spouts.values():
                spout.ack_sealed(self.now())
        instruction = checkpoint_tuple(action, txid)
        for task in tasks:
            if task in self.inbox:
                self.inbox[task].insert(0, instruction)
                self.queued += 1

    def _roll_back(self, txid: int, tasks: list[int], generation: int) -> None:
        """Drop every tuple here, waiting or unsent; roll ``tasks`` back to ``txid``."""
        self.paused, self.generation = True, generation
        for task, tuples in self.inbox.items():
            self.dropped += len(tuples)
            self.inbox[task] = []
        for peer in self.peers.values():
            self.dropped += len(peer.rows) + sum(count for _, count, _ in peer.frames)
            peer.rows, peer.frames = [], deque()
            peer.rows_extra = peer.extra = 0
        self.inbox_extra = dict.fromkeys(self.inbox, 0)
        self.queued = 0
        self._system("rollback", txid, tasks)

    def _fail_pending(
        self, reason: FailReason, culprits: dict[int, FailReason] | None = None
    ) -> None:
        """After a rollback reached every worker: fail what the spouts track, resume them.

        The ``culprits`` (trees whose processing called for the rollback) fail with their
        own reason first.
        """
        now = self.now()
        for spout in self.spouts.values():
            spout.begin(self.turns, now, self.ids[spout.task_id])
            spout.fail_culprits(culprits or {})
            spout.fail_pending(reason)
            self._route(spout.drain(), now)  # replays, in the new generation
        self.paused = False

    def now(self) -> float:
        """Topology time, as the driver's clock has it."""
        return self.sim_now if self.simulated else time.time() - self.epoch

    def _receive(self, now: float) -> int:
        """Take the frames waiting on the socket, while the backlog leaves room."""
        got = 0
        self._unread = False
        while True:
            if self.queued >= MAX_BACKLOG:
                self._unread = True  # read the rest once the backlog has room again
                break
            try:
                header, frame = self.receiver.recv_multipart(zmq.NOBLOCK, copy=True)
            except zmq.Again:
                break
            generation = int.from_bytes(header, "little")
            for task, task_runs in pickle.loads(frame):
                tuples = self.codec.tuples_of_runs(task_runs)
                got += len(tuples)
                if generation < self.generation:  # sent before a rollback
                    self.dropped += len(tuples)
                else:
                    self._deliver(task, tuples, now, extra_rows(task_runs))
        self.received += got
        return got

    def _deliver(self, task: int, tuples: list[Tuple], now: float, extra: int = 0) -> None:
        spout = self.spouts.get(task)
        if spout is not None:  # the acker's outcomes: the spout task that emitted the roots
            for tup in tuples:
                spout.on_outcome(tup, now)
            self.handled += len(tuples)
        else:
            self.inbox[task].extend(tuples)
            self.queued += len(tuples) + extra
            self.inbox_extra[task] += extra

    def _route(self, rows: list[Row], now: float, columns: bool = False) -> None:
        """Hand rows to local tasks, or to the peer that holds their task.

        ``columns``: the rows came from an Arrow component, and a record batch counts in
        the backlog as the rows it holds (the check costs the tuple path nothing).
        """
        if columns:
            self._route_columns(rows, now)
            return
        where, index, peers, inbox = self.plan.worker_of, self.index, self.peers, self.inbox
        local = 0
        for row in rows:
            task = row[0]
            worker = where[task]
            if worker != index:
                peer = peers[worker]
                if not peer.rows:
                    peer.since = time.monotonic()
                peer.rows.append(row)
            elif task in inbox:
                if self.try_serialize:
                    self.codec.frame(self.codec.runs([row])[0])
                inbox[task].append(row[1])
                local += 1
            else:  # the acker's outcome for a spout task of this worker
                self.spouts[task].on_outcome(row[1], now)
                self.handled += 1
        self.queued += local

    def _route_columns(self, rows: list[Row], now: float) -> None:
        """:meth:`_route` for an Arrow component's rows: record batches weighed in rows."""
        where, index = self.plan.worker_of, self.index
        for row in rows:
            tup = row[1]
            extra = tup.num_rows - 1 if tup.__class__ is RowBatch else 0
            if not extra:
                self._route([row], now)
                continue
            task = row[0]
            worker = where[task]
            if worker != index:
                peer = self.peers[worker]
                peer.rows_extra += extra
                peer.extra += extra
            elif task in self.inbox:
                self.queued += extra
                self.inbox_extra[task] += extra
            self._route([row], now)

    def _run_bolts(self, now: float) -> int:
        ran = 0
        took = self._took
        for task_id, task in self.bolts.items():
            tuples = self.inbox[task_id]
            if not tuples:
                continue
            if took[task_id] > FLUSH_SECS:  # what waits for other workers goes first
                self._flush(force=True)
            started = time.perf_counter()
            self.inbox[task_id] = []
            self.queued -= len(tuples) + self.inbox_extra[task_id]
            self.inbox_extra[task_id] = 0
            ran += len(tuples)
            self.handled += len(tuples)
            out: list[Row] = []
            captured = self.captured if task_id in self._capturing else None
            task.run(tuples, self.turns, now, out, captured, ids=self.ids[task_id])
            task.collector.hand_over(self.errors, self.debug)
            if self.try_serialize:
                snapshot(task)  # raises, naming the attribute that cannot be pickled
            self._route(out, now, task.columnar)
            took[task_id] = time.perf_counter() - started
        return ran

    def _run_spouts(self, now: float) -> int:
        emitted = 0
        room = MAX_BACKLOG - self._backlog()
        asking = self.active and not self.paused and room > 0
        for spout in self.spouts.values():
            spout.begin(self.turns, now, self.ids[spout.task_id])
            if asking:  # an Arrow spout's batches stop once they fill the room
                emitted += spout.next_batch(SPOUT_CALLS, room if spout.columnar else None)
            rows = spout.drain()  # with what ack()/fail() emitted (replays)
            spout.collector.hand_over(self.errors, self.debug)
            self._route(rows, now, spout.columnar)
        return emitted

    def _backlog(self) -> int:
        return self.queued + sum(
            len(p.rows) + p.frames.__len__() * FRAME_TUPLES + p.extra for p in self.peers.values()
        )

    def _flush(self, force: bool = False) -> None:
        """Send the frames that are full or whose first tuple waited long enough.

        ``force``: send every tuple waiting, now.
        """
        now = time.monotonic()
        header = self.generation.to_bytes(4, "little")
        for peer in self.peers.values():
            weight = len(peer.rows) + peer.rows_extra
            due = force or weight >= FRAME_TUPLES or now - peer.since >= FLUSH_SECS
            if peer.rows and due:
                for rows, extra in _frame_sized(peer.rows, peer.rows_extra):
                    runs, _ = self.codec.runs(rows)
                    peer.frames.append((self.codec.frame(runs), len(rows), extra))
                peer.rows, peer.rows_extra = [], 0
            while peer.frames:
                frame, count, extra = peer.frames[0]
                try:
                    peer.socket.send_multipart([header, frame], zmq.NOBLOCK, copy=False)
                except zmq.Again:
                    break  # the peer's queue is full: the frame waits here (backpressure)
                peer.frames.popleft()
                self.sent += count
                peer.extra -= extra

    def _report(self, final: bool = False, failure: BaseException | None = None) -> None:
        self._next_report = time.monotonic() + REPORT_SECS
        self.log_levels.expire()
        if self._cpu is not None and (text := self._cpu.done()) is not None:
            self._cpu, self._cpu_text = None, text
        for spout in self.spouts.values():
            spout.collector.hand_over(self.errors, self.debug)
            spout.note_failed_keys()
        stats = [s.stats for s in self.spouts.values()] + [t.stats for t in self.bolts.values()]
        report = WorkerReport(
            self.index,
            stats,
            {t: len(s.pending) for t, s in self.spouts.items()},
            self.errors,
            self.debug,
            self.sent,
            self.received,
            self._backlog(),
            sum(s.collector.emitted for s in self.spouts.values()),
            self.turns,
            self.handled,
            {key: spout.outcomes() for key, spout in self.fed.items()},
            self._probe,
            _picklable(failure),
            self.captured[:],
            final,
            self.dropped,
            self._sealed,
            usage(self.started),
            self._stacks,
            self._cpu_text,
            self.log_ring.take() if self.log_ring is not None else [],
            next(filter(None, (s.holding() for s in self.spouts.values())), None),
            self._dry_secs(),
        )
        self._probe, self._sealed, self._stacks, self._cpu_text = -1, None, None, None
        self.control.send(pickle.dumps(report, protocol=5))
        self.errors, self.debug = [], []
        self.captured.clear()  # in place: the spouts' collectors append to this list
        for spout in self.spouts.values():
            if spout.stats.complete_latencies:
                spout.stats.fold()

    def _dry_secs(self) -> float | None:
        """How long every spout here has been dry, None while one is not (see the report)."""
        since = all_dry_since(self.spouts.values())
        return None if since is None else time.monotonic() - since

    def _shut_down(self) -> None:
        """Fail what is still pending (``shutdown``), close the spouts, clean the bolts up."""
        for spout in self.spouts.values():
            spout.fail_all_pending(SHUTDOWN)
            spout.close()
        for task in self.bolts.values():
            task.cleanup()
            task.collector.hand_over(self.errors, self.debug)
        self._report(final=True)

    def close(self) -> None:
        """Close the sockets (the context is the caller's)."""
        for peer in self.peers.values():
            peer.socket.close(linger=0)
        self.receiver.close(linger=0)
        self.control.close()


def _picklable(failure: BaseException | None) -> BaseException | None:
    """``failure``, or its text in a SparkStormError when it cannot travel to the driver."""
    if failure is None:
        return None
    try:
        pickle.dumps(failure)
    except Exception:
        return SparkStormError(f"{type(failure).__name__}: {failure}")
    return failure
