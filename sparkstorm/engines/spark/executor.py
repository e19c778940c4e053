"""The executor side of the ``spark`` engine: what runs in a Spark Python worker.

``run_partition`` is the function ``mapInArrow`` calls once per partition per
superstep. It decodes the partition's envelopes, runs its bolt and acker tasks in hops
(tuples between tasks of the partition go on at once: ``tasks/hops.py``), and yields
what leaves the partition: tuples for other tasks, the ackers' outcomes for the driver,
a state snapshot per task, and one row of statistics.

A task's instance stays resident in the Python worker that last ran it, so
``prepare`` runs once per task per worker process; where another worker gets the
partition, a fresh copy is prepared and the state snapshot laid over it.
"""

from __future__ import annotations

import logging
import os
import pickle
import socket
import sys
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sparkstorm.config import (
    SPARKSTORM_GC_GEN0_THRESHOLD,
    SPARKSTORM_SPARK_RESIDENT,
    SPARKSTORM_SUPERSTEP_HOPS,
)
from sparkstorm.engines.rows import (
    KIND_CLEANUP,
    KIND_META,
    KIND_OUTCOMES,
    KIND_STATE,
    KIND_TUPLES,
    RowCodec,
    append_row,
    new_columns,
    to_batch,
)
from sparkstorm.engines.spark.blocked_calls import BlockedCall, send_report
from sparkstorm.engines.wire import Captured, PartitionReport
from sparkstorm.reliability.base_collector import ReportedError
from sparkstorm.reliability.debug import apply_debug
from sparkstorm.tasks.gc_tuning import fewer_collections
from sparkstorm.tasks.hops import run_in_hops
from sparkstorm.tasks.log_levels import AppliedLevels
from sparkstorm.tasks.log_ring import LogRing
from sparkstorm.tasks.process_usage import usage
from sparkstorm.tasks.profile import Profile
from sparkstorm.tasks.task_runner import BoltTask
from sparkstorm.tasks.task_state import restore, snapshot
from sparkstorm.tasks.watchdog import Watchdog, blocked_at, blocked_message
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.tuple import Row, Tuple

if TYPE_CHECKING:
    from collections.abc import Iterator

log = logging.getLogger(__name__)


CLEANUP_SUPERSTEP = -1
"""The superstep number of the job that calls ``cleanup`` on every task at stop."""

_PLANS: OrderedDict[str, tuple[Plan, RowCodec, int]] = OrderedDict()
"""Unpickled plans by run id, per Python worker process (the last few runs)."""
_RESIDENT: dict[tuple[str, int], tuple[int, BoltTask]] = {}
_STARTED = time.time()
"""About when this Python worker started: when it first imported this module."""
_LOG_RING: LogRing | None = None
"""This Python worker's log records, for the next report (installed at its first run)."""
_LEVELS = AppliedLevels()
"""The loggers an operator set (Storm UI's "Change log level"), as of this superstep."""


def _logging(levels: dict[str, str] | None) -> None:
    """Keep this worker's log records for the driver; set the loggers as asked."""
    global _LOG_RING
    if _LOG_RING is None:
        _LOG_RING = LogRing()
        logging.getLogger().addHandler(_LOG_RING)
    _LEVELS.apply(levels or {})


"""(run id, task) -> (superstep of its last snapshot, live task), per worker process."""


class _Watched:
    """What this worker's watchdog reads: the task executing now, and where to report."""

    task: BoltTask | None = None
    thread = 0
    run_id = ""
    report_to: tuple[str, int] | None = None
    watchdog: Watchdog | None = None


def _watch(run_id: str, report_to: tuple[str, int], limit_secs: float) -> None:
    """Watch this worker's calls for the run (one watchdog thread per worker process)."""
    _Watched.run_id, _Watched.report_to = run_id, report_to
    _Watched.thread = threading.get_ident()
    if _Watched.watchdog is None:
        _Watched.watchdog = Watchdog(_running_call, limit_secs, _report_blocked).start()
    _Watched.watchdog.limit_secs = limit_secs


@contextmanager
def _watching(task: BoltTask) -> Iterator[None]:
    """Let the watchdog see ``task``'s calls (``prepare``, ``execute``, ``cleanup``)."""
    _Watched.task = task
    try:
        yield
    finally:
        _Watched.task = None


def _running_call() -> tuple[str, Any] | None:
    task = _Watched.task
    return task.call_under_way() if task is not None else None


def _report_blocked(call: str, secs: float) -> None:
    call, stack = blocked_at(call, sys._current_frames().get(_Watched.thread))
    report = BlockedCall(_Watched.run_id, call, secs, socket.gethostname(), os.getpid(), stack)
    try:
        if _Watched.report_to is not None:
            send_report(_Watched.report_to, report)
    except OSError as exc:  # the driver cannot be reached: the executor's log keeps it
        message = blocked_message(call, secs, f" (the driver's listener: {exc})")
        log.warning("%s; it is at:\n%s", message, stack)


@dataclass
class _Inbox:
    envelopes: list[tuple[int, bytes]] = field(default_factory=list)
    state: tuple[int, bytes] | None = None
    cleanup: bool = False


def _worker_plan(run_id: str, plan_bytes: Any) -> tuple[Plan, RowCodec, int]:
    if run_id not in _PLANS:
        code, payload = plan_bytes.value  # the driver's folders first: the plan needs them
        code.install()
        plan, seed = pickle.loads(payload)
        _PLANS[run_id] = (plan, RowCodec(plan), seed)
        while len(_PLANS) > 4:
            _forget(_PLANS.popitem(last=False)[0])
    return _PLANS[run_id]


def _forget(run_id: str) -> None:
    """Drop a finished (or long-unused) run's plan and resident tasks from this worker."""
    _PLANS.pop(run_id, None)
    for key in [key for key in _RESIDENT if key[0] == run_id]:
        del _RESIDENT[key]


def _task_for(
    run_id: str, plan: Plan, seed: int, task_id: int, state: tuple[int, bytes] | None
) -> BoltTask:
    """The task's instance in this worker: resident (newest or overlaid), or a new copy.

    ``prepare`` runs once per task per worker process: an instance left here by an
    earlier superstep gets the newer snapshot laid over it (its ``transient`` clients
    survive); only a worker that never held the task prepares a fresh copy. Without a
    snapshot (the task's first superstep, or its state was lost with an executor) the
    task starts fresh, as a Storm task restarts after its worker died.
    """
    # Popped, not read: an attempt that dies half-way must not leave a half-updated
    # instance for a retry in this process; the retry restores from the snapshot.
    resident = _RESIDENT.pop((run_id, task_id), None)
    if plan.conf[SPARKSTORM_SPARK_RESIDENT] and state is not None and resident is not None:
        snapshot_superstep, task = resident
        if snapshot_superstep != state[0]:  # it ran elsewhere since: take its newer state
            restore(task, state[1])
        return task
    task = BoltTask(plan, task_id, seed)
    with _watching(task):
        task.prepare()
    if state is not None:
        restore(task, state[1])
        task.stats.prepares += 1  # the snapshot's counters predate this copy's prepare
    return task


def run_partition(
    batches: Iterator[pa.RecordBatch],
    *,
    run_id: str,
    plan_bytes: Any,
    superstep: int,
    now: float,
    capture: frozenset[str],
    watch: tuple[str, int, float] | None = None,
    debug_shares: dict[str, float] | None = None,
    log_levels: dict[str, str] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Run every task whose rows are in this partition; yield what they emit.

    Called by Spark in a Python worker, once per partition per superstep. ``watch`` is
    the driver's blocked-call listener (host, port) and the watchdog's limit;
    ``debug_shares``, once an operator used Storm UI's Debug, each component's share of
    calls noted; ``log_levels``, the loggers an operator set, by level.
    """
    _logging(log_levels)
    plan, codec, seed = _worker_plan(run_id, plan_bytes)
    if watch is not None:
        _watch(run_id, (watch[0], watch[1]), watch[2])
    with fewer_collections(plan.conf[SPARKSTORM_GC_GEN0_THRESHOLD]):
        yield from _run_tasks(
            batches, plan, codec, seed, run_id, superstep, now, capture, debug_shares
        )


def _run_tasks(
    batches: Iterator[pa.RecordBatch],
    plan: Plan,
    codec: RowCodec,
    seed: int,
    run_id: str,
    superstep: int,
    now: float,
    capture: frozenset[str],
    debug_shares: dict[str, float] | None = None,
) -> Iterator[pa.RecordBatch]:
    # One function on purpose: the partition's hot path, whose locals the ``run`` closure
    # that the hops call shares; split, each call would pass eight of them around.
    profile = Profile()
    clock = time.perf_counter
    inboxes = _read_inboxes(batches, profile)
    if not inboxes:
        return
    out_cols = new_columns()
    errors: list[ReportedError] = []
    debug: list[str] = []
    captured: Captured = []
    in_flight = 0
    ackers = frozenset(plan.acker_tasks)
    worker_of = plan.worker_of
    part = worker_of[next(iter(inboxes))]
    hops = 0 if superstep == CLEANUP_SUPERSTEP else plan.conf[SPARKSTORM_SUPERSTEP_HOPS]
    started = clock()
    queue = {
        task_id: [
            tup
            for _, payload in sorted(inbox.envelopes, key=itemgetter(0))
            for tup in codec.tuples(payload)
        ]
        for task_id, inbox in inboxes.items()
        if inbox.envelopes or inbox.cleanup
    }
    profile.add("decode", clock() - started)
    tasks: dict[int, BoltTask] = {}

    def run(task_id: int, tuples: list[Tuple], out: list[Row], hop: int) -> None:
        task = tasks.get(task_id)
        if task is None:
            inbox = inboxes.get(task_id)
            state = inbox.state if inbox is not None else None
            task = tasks[task_id] = _task_for(run_id, plan, seed, task_id, state)
            if debug_shares is not None:
                apply_debug({task_id: task}, debug_shares)
        capturing = captured if task.component_id in capture else None
        started = clock()
        try:
            with _watching(task):
                task.run(tuples, superstep, now, out, capturing, hop)
        finally:
            profile.add("execute", clock() - started)

    started = clock()
    sent = run_in_hops(queue, run, worker_of=worker_of, worker=part, hops=hops, ackers=ackers)
    # routing between hops counts as encoding: it is what replaces an encode here
    profile.add("encode", clock() - started - profile.get("execute", 0.0))
    for task_id, inbox in sorted(inboxes.items()):
        if task_id not in tasks and inbox.state is not None:  # idle: pass the snapshot on
            append_row(out_cols, task_id, part, inbox.state[0], KIND_STATE, 0, inbox.state[1])
    for task_id, task in sorted(tasks.items()):
        started = clock()
        if task_id in ackers:
            codec.envelopes(sent[task_id], task_id, KIND_OUTCOMES, out_cols)
        else:
            in_flight += codec.envelopes(sent[task_id], task_id, KIND_TUPLES, out_cols)
        if task_id in inboxes and inboxes[task_id].cleanup:
            with _watching(task):
                task.cleanup()
        else:
            append_row(out_cols, task_id, part, superstep, KIND_STATE, 0, snapshot(task))
            _RESIDENT[(run_id, task_id)] = (superstep, task)
        task.collector.hand_over(errors, debug)
        profile.add("encode", clock() - started)
    stats = [task.stats for _, task in sorted(tasks.items())]
    if superstep == CLEANUP_SUPERSTEP:
        _forget(run_id)
    started = clock()
    batch = to_batch(out_cols)
    profile.add("worker_arrow", clock() - started)
    yield batch
    # the statistics go in a batch of their own, so they can time the one above
    yield _report_batch(
        PartitionReport(
            stats,
            errors,
            captured,
            debug,
            in_flight,
            os.getpid(),
            profile,
            socket.gethostname(),
            usage(_STARTED),
            _LOG_RING.take() if _LOG_RING is not None else [],
            *_attempt(),
        )
    )


def _attempt() -> tuple[int, int]:
    """The running task's attempt number and partition: Spark runs a lost attempt again."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return (context.attemptNumber(), context.partitionId()) if context is not None else (0, 0)


def _read_inboxes(batches: Iterator[pa.RecordBatch], profile: Profile) -> dict[int, _Inbox]:
    """Each task's envelopes of tuples, snapshot and cleanup order, from the input batches."""
    inboxes: dict[int, _Inbox] = {}
    for batch in batches:
        started = time.perf_counter()
        cols = batch.to_pydict()
        profile.add("worker_arrow", time.perf_counter() - started)
        for task, ord_, kind, payload in zip(
            cols["task"], cols["ord"], cols["kind"], cols["payload"], strict=True
        ):
            inbox = inboxes.setdefault(task, _Inbox())
            if kind == KIND_TUPLES:
                inbox.envelopes.append((ord_, payload))
            elif kind == KIND_STATE:
                inbox.state = (ord_, payload)
            elif kind == KIND_CLEANUP:
                inbox.cleanup = True
    return inboxes


def _report_batch(report: PartitionReport) -> pa.RecordBatch:
    """The partition's report, pickled into a batch of one ``KIND_META`` row."""
    cols = new_columns()
    append_row(cols, -1, 0, 0, KIND_META, 0, pickle.dumps(report, protocol=5))
    return to_batch(cols)
