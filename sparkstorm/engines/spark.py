"""The ``spark`` engine: every superstep is one Spark job; bolts run in the executors.

Per superstep the driver unions the rows in flight, the task state rows and its new
tick/spout rows; ``repartitionById`` deals the tasks over as many partitions as Spark
has cores (``sparkstorm.spark.partitions``), and ``mapInArrow`` runs each partition's
bolt and acker tasks. One partition per core rather than per task: every Python
partition costs a worker round trip (~60 ms here), so fewer, fuller partitions win. The
output is local-checkpointed (lazily: it is materialized by the same job that collects
the driver's rows), which cuts the lineage every superstep. Only the acker's outcomes
and per-partition metrics reach the driver; tuples in flight and state stay in the
executors.

A task's instance stays resident in the Python worker that last ran it; where another
worker gets the partition, a fresh copy is prepared and the state snapshot laid over it.
If a superstep's job fails (an executor was lost), its rows in flight and the state rows
are dropped, as tuples die with a Storm worker: their trees time out and the spouts
replay them.

This is the only module that imports pyspark.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial, reduce
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import cloudpickle
import pyarrow as pa

from sparkstorm.config import (
    SPARKSTORM_GC_GEN0_THRESHOLD,
    SPARKSTORM_SPARK_PARTITIONS,
    SPARKSTORM_SPARK_PIPELINE,
    SPARKSTORM_SPARK_RESIDENT,
    TOPOLOGY_NAME,
    spark_settings,
)
from sparkstorm.engines.base import Captured, StepResult
from sparkstorm.engines.rows import (
    ARROW_SCHEMA,
    DRIVER_ORD,
    KIND_CLEANUP,
    KIND_META,
    KIND_OUTCOMES,
    KIND_STATE,
    KIND_TUPLES,
    SPARK_SCHEMA,
    RowCodec,
    append_row,
    new_columns,
    to_batch,
)
from sparkstorm.errors import ComponentStateError, InvalidTopologyError, SparkStormError
from sparkstorm.reliability.collectors import ReportedError, Row
from sparkstorm.runtime.gc_tuning import fewer_collections
from sparkstorm.runtime.metrics import TaskStats
from sparkstorm.runtime.profile import Profile
from sparkstorm.runtime.task_runner import BoltTask, copy_component
from sparkstorm.runtime.task_state import restore, snapshot
from sparkstorm.topology.plan import Plan

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

MIN_JAVA = 17
MAX_CONSECUTIVE_LOST = 3
CLEANUP_SUPERSTEP = -1
"""The superstep number of the job that calls ``cleanup`` on every task at stop."""


# -- session -----------------------------------------------------------------------------
def check_java() -> None:
    """Raise a clear error unless Java 17 or newer is available to start Spark."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    hint = (
        "install OpenJDK 17 or newer (Debian/Ubuntu: apt-get install "
        "openjdk-17-jre-headless) or set JAVA_HOME to one"
    )
    if not java or not os.path.exists(java):
        msg = f"the spark engine needs Java {MIN_JAVA}+, and no java was found; {hint}"
        raise SparkStormError(msg)
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    found = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    major = int(found.group(1)) if found else 0
    if major == 1 and found and found.group(2):
        major = int(found.group(2))  # "1.8.0" is Java 8
    if major < MIN_JAVA:
        msg = f"the spark engine needs Java {MIN_JAVA}+, but {java} is Java {major or '?'}; {hint}"
        raise SparkStormError(msg)


@contextlib.contextmanager
def _interrupt_deferred() -> Iterator[list[int]]:
    """Hold Ctrl-C until the block ends; the list it gives says whether one came.

    PySpark's gateway launch cannot be interrupted safely: a KeyboardInterrupt there
    deletes the directory the JVM is about to write its port into, and the JVM, its
    main thread dead and py4j's listener alive, stays up for ever, orphaned. A second
    Ctrl-C still interrupts at once, for a launch that hangs.
    """
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return

    def hold(signum: int, frame: object) -> None:
        if got:
            raise KeyboardInterrupt
        got.append(signum)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield got
    finally:
        signal.signal(signal.SIGINT, previous)


def create_session(
    master: str = "local[*]", conf: dict[str, str] | None = None, *, ui: bool = True
) -> SparkSession:
    """A SparkSession for sparkstorm: the given master, reused Python workers, quiet logs.

    The Spark UI runs on a free port (``spark.sparkContext.uiWebUrl`` says where) unless
    ``ui`` is False; ``conf`` (any ``spark.*`` setting) goes over these defaults. Workers
    run this interpreter unless ``PYSPARK_PYTHON`` says otherwise.
    """
    check_java()
    check_master(master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName("sparkstorm")
        .config("spark.ui.enabled", str(ui).lower())
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.python.worker.reuse", "true")
    )
    if ui:
        builder = builder.config("spark.ui.port", str(_free_port()))
    settings = dict(conf or {})
    log_file = None
    if SparkContext._active_spark_context is None:  # the JVM starts here: its log goes to a file
        log_file = _log_file()
        java_options = f"-Dlog4j2.configurationFile={_log_config(log_file)}"
        given = settings.get("spark.driver.extraJavaOptions")
        settings["spark.driver.extraJavaOptions"] = " ".join(filter(None, [given, java_options]))
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _interrupt_deferred() as interrupted:
        session = builder.getOrCreate()
    if interrupted:  # Ctrl-C came while the JVM started: stop it, then act on the Ctrl-C
        session.stop()
        raise KeyboardInterrupt
    if log_file is not None:  # a session reused here keeps the file its creator named
        session.sparkstorm_log_file = log_file  # type: ignore[attr-defined]
    quiet_superstep_warnings(session)
    return session


def _log_file() -> Path:
    folder = Path(tempfile.gettempdir()) / "sparkstorm"
    folder.mkdir(exist_ok=True)
    return folder / f"spark-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"


def _log_config(log_file: Path) -> Path:
    """A log4j2 configuration that sends Spark's log (WARN and up) to ``log_file`` only.

    Spark's default writes to the terminal, where its per-superstep WARN lines would land
    inside the live statistics table; the file keeps them for whoever needs them.
    """
    config = log_file.with_suffix(".log4j2.properties")
    config.write_text(
        "rootLogger.level = warn\n"
        "rootLogger.appenderRef.file.ref = file\n"
        "appender.file.type = File\n"
        "appender.file.name = file\n"
        f"appender.file.fileName = {log_file}\n"
        "appender.file.layout.type = PatternLayout\n"
        "appender.file.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex\n"
    )
    return config


MASTER_PROBE_SECS = 5.0


def check_master(master: str) -> None:
    """Fail in seconds, in one line, when a standalone master cannot be reached.

    Spark itself retries a ``spark://`` master for over a minute and prints a stack of
    Java frames per attempt; a TCP connect to each listed host says the same at once.
    """
    if not master.startswith("spark://"):
        return
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=MASTER_PROBE_SECS).close()
            return
        except (OSError, ValueError) as exc:
            problem = exc
    msg = (
        f"cannot reach the Spark master {master} ({problem}); start it, or pass "
        f"--master local[*] to run on this machine"
    )
    raise SparkStormError(msg)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        port: int = probe.getsockname()[1]
        return port


QUIET_LOGGERS = (
    # "RDD n was locally checkpointed, its lineage has been truncated...": once per
    # superstep, when the engine releases the checkpoint nothing reads any more
    "org.apache.spark.rdd.MapPartitionsRDD",
    "org.apache.spark.rdd.RDD",
)


def quiet_superstep_warnings(session: SparkSession) -> None:
    """Raise the log level of Spark's loggers that warn once per superstep to ERROR."""
    try:
        jvm: Any = session.sparkContext._jvm
        level = jvm.org.apache.logging.log4j.Level.ERROR
        for name in QUIET_LOGGERS:
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)
    except Exception as exc:  # Spark Connect has no JVM here; a log level is no reason to stop
        log.debug("could not quiet Spark's per-superstep warnings: %s", exc)


# -- executor side -----------------------------------------------------------------------
_PLANS: OrderedDict[str, tuple[Plan, RowCodec, int]] = OrderedDict()
"""Unpickled plans by run id, per Python worker process (the last few runs)."""
_RESIDENT: dict[tuple[str, int], tuple[int, BoltTask]] = {}
"""(run id, task) -> (superstep of its last snapshot, live task), per worker process."""


@dataclass
class _Inbox:
    envelopes: list[tuple[int, bytes]] = field(default_factory=list)
    state: tuple[int, bytes] | None = None
    cleanup: bool = False


def _worker_plan(run_id: str, plan_bytes: Any) -> tuple[Plan, RowCodec, int]:
    if run_id not in _PLANS:
        plan, seed, num_parts = pickle.loads(plan_bytes.value)
        _PLANS[run_id] = (plan, RowCodec(plan, num_parts), seed)
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
) -> Iterator[pa.RecordBatch]:
    """Run every task whose rows are in this partition; yield what they emit.

    Called by Spark in a Python worker, once per partition per superstep.
    """
    plan, codec, seed = _worker_plan(run_id, plan_bytes)
    with fewer_collections(plan.conf[SPARKSTORM_GC_GEN0_THRESHOLD]):
        yield from _run_tasks(batches, plan, codec, seed, run_id, superstep, now, capture)


def _run_tasks(
    batches: Iterator[pa.RecordBatch],
    plan: Plan,
    codec: RowCodec,
    seed: int,
    run_id: str,
    superstep: int,
    now: float,
    capture: frozenset[str],
) -> Iterator[pa.RecordBatch]:
    profile = Profile()
    clock = time.perf_counter
    inboxes: dict[int, _Inbox] = {}
    for batch in batches:
        started = clock()
        cols = batch.to_pydict()
        profile.add("worker_arrow", clock() - started)
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
    if not inboxes:
        return
    out_cols = new_columns()
    stats: list[TaskStats] = []
    errors: list[ReportedError] = []
    captured: Captured = []
    in_flight = 0
    ackers = set(plan.acker_tasks)
    for task_id in sorted(inboxes):
        inbox = inboxes[task_id]
        part = codec.part_of[task_id]
        if not inbox.envelopes and not inbox.cleanup:
            if inbox.state is not None:  # idle this superstep: pass the snapshot through
                append_row(out_cols, task_id, part, inbox.state[0], KIND_STATE, 0, inbox.state[1])
            continue
        started = clock()
        task = _task_for(run_id, plan, seed, task_id, inbox.state)
        tuples = [
            tup
            for _, payload in sorted(inbox.envelopes, key=itemgetter(0))
            for tup in codec.tuples(payload)
        ]
        decoded = clock()
        out: list[Row] = []
        task.run(tuples, superstep, now, out, captured if task.component_id in capture else None)
        executed = clock()
        if task_id in ackers:
            codec.envelopes(out, task_id, KIND_OUTCOMES, out_cols)
        else:
            in_flight += codec.envelopes(out, task_id, KIND_TUPLES, out_cols)
        if inbox.cleanup:
            task.cleanup()
        else:
            append_row(out_cols, task_id, part, superstep, KIND_STATE, 0, snapshot(task))
            _RESIDENT[(run_id, task_id)] = (superstep, task)
        errors.extend(task.collector.errors)
        task.collector.errors.clear()
        stats.append(task.stats)
        profile.add("decode", decoded - started)
        profile.add("execute", executed - decoded)
        profile.add("encode", clock() - executed)
    if superstep == CLEANUP_SUPERSTEP:
        _forget(run_id)
    started = clock()
    batch = to_batch(out_cols)
    profile.add("worker_arrow", clock() - started)
    yield batch
    # the statistics go in a batch of their own, so they can time the one above
    meta = pickle.dumps((stats, errors, captured, in_flight, os.getpid(), profile), protocol=5)
    meta_cols = new_columns()
    append_row(meta_cols, -1, 0, 0, KIND_META, 0, meta)
    yield to_batch(meta_cols)


# -- driver side -------------------------------------------------------------------------
class _Planned(NamedTuple):
    """One superstep's DataFrames, before its job runs."""

    out: DataFrame
    """Everything the tasks emit, local-checkpointed by the job that collects ``wanted``."""
    wanted: DataFrame
    """The rows the driver collects: outcomes and partition statistics."""
    held: DataFrame
    """The rows that stay in the executors for the next superstep: tuples and state."""


class SparkEngine:
    """Runs bolt and acker tasks in Spark executors, one Spark job per superstep."""

    name = "spark"
    target_superstep_secs = 1.0
    """Each superstep pays a job's fixed cost (~0.2-0.3 s on 2 cores); a second amortizes
    it (word count, 200k sentences: 79k tuples/s at 0.5 s, 113k at 1 s, 115k at 2 s)."""

    def __init__(
        self, spark: SparkSession | None = None, master: str | None = None, *, ui: bool = True
    ) -> None:
        self._given = spark
        self._master = master
        self._ui = ui
        self.worker_pids: set[int] = set()
        self._held: DataFrame | None = None  # tuples in flight and state snapshots
        self._held_before: DataFrame | None = None  # what the running job reads
        self._checkpoint: DataFrame | None = None  # the output that _held reads
        self._held_tuples = 0  # how many of the held rows' tuples are in flight
        self._running: tuple[Future[tuple[pa.Table, float]], DataFrame, int, float] | None = None
        self._jobs = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkstorm-job")
        self._lost_in_a_row = 0

    def start(self, plan: Plan, seed: int, capture: frozenset[str]) -> None:
        """Create or take the session and ship the plan to the executors."""
        settings = spark_settings(plan.conf)
        if self._given is not None and settings:
            log.warning(
                "the topology's spark.* settings %s are ignored: the engine was given a "
                "running SparkSession; set them where that session is built",
                sorted(settings),
            )
        self.spark = self._given or create_session(
            self._master or "local[*]", settings, ui=self._ui
        )
        self.topology_name = plan.conf.get(TOPOLOGY_NAME) or "topology"
        # Adaptive execution would run each superstep's shuffle as jobs of its own and
        # re-plan in between; a superstep is one small, fixed-shape job. The session's
        # own setting comes back at stop: a shared session's other queries keep theirs.
        self._adaptive = self.spark.conf.get("spark.sql.adaptive.enabled")
        self.spark.conf.set("spark.sql.adaptive.enabled", "false")
        self.plan = plan
        parts = plan.conf[SPARKSTORM_SPARK_PARTITIONS] or self.spark.sparkContext.defaultParallelism
        self.codec = RowCodec(plan, parts)
        self.capture = capture
        self.run_id = uuid.uuid4().hex
        self._pipeline = bool(plan.conf[SPARKSTORM_SPARK_PIPELINE])
        for bolt in plan.topology.bolts:  # a component Spark cannot ship, named now
            copy_component(bolt.obj, bolt.component_id)
        payload = cloudpickle.dumps((plan.for_executors(), seed, self.codec.num_parts), protocol=5)
        self._plan_bytes = self.spark.sparkContext.broadcast(payload)

    def superstep(self, rows: list[Row], superstep: int, now: float) -> StepResult:
        """Deliver everything one hop in one Spark job; collect only what the driver needs.

        Pipelined (``sparkstorm.spark.pipeline``, the default), this returns the result of
        the superstep launched by the previous call, and the job launched now runs while
        the driver calls the spouts for the next one; otherwise, this superstep's result.
        The new superstep's plan is built on the running job's (lazy) output before
        waiting for it: planning costs ~100 py4j calls, which then overlap the job.
        """
        started = time.perf_counter()
        columns = new_columns()
        self.codec.envelopes(rows, DRIVER_ORD, KIND_TUPLES, columns)
        frame = self._frame(columns)
        encoded = time.perf_counter()
        planned = self._plan(frame, self._held, superstep, now)
        planning = time.perf_counter() - encoded
        encoded -= started
        held = self._held
        try:
            result = self.collect()
        except BaseException:  # a user error raised: the plan will never run
            self._discard(planned)
            raise
        if held is not self._held:  # the running job was lost: plan without its output
            self._discard(planned)
            planned = self._plan(frame, self._held, superstep, now)
        if planned is not None and (frame is not None or self._held_tuples):
            self._launch(planned, superstep, now)
        else:
            self._discard(planned)  # nothing to deliver after all
        if not self._pipeline:
            result = self.collect()
        result = result or StepResult([], 0)
        result.profile.add("driver_arrow", encoded)
        result.profile.add("driver_plan", planning)
        return result

    @property
    def busy(self) -> bool:
        """Whether a launched superstep has not been collected yet."""
        return self._running is not None

    def collect(self) -> StepResult | None:
        """Wait for the superstep still running and return its result (None: none runs)."""
        if self._running is None:
            return None
        future, out, superstep, now = self._running
        self._running = None
        waited = time.perf_counter()
        try:
            collected, job_secs = future.result()
        except Exception as exc:  # the job failed: a lost executor, or a user error
            self._held = self._held_before  # the failed job's output is no one's input
            self._held_tuples = 0
            self._release(out)
            self._release(self._checkpoint)
            self._checkpoint = None
            return self._lost(exc, superstep, now)
        waited = time.perf_counter() - waited
        self._lost_in_a_row = 0
        self._release(self._checkpoint)  # the superstep before: nothing reads it any more
        self._checkpoint = out
        started = time.perf_counter()
        result = self._decode(collected)
        result.superstep = superstep
        self._held_tuples = result.in_flight
        result.profile.add("spark_job", job_secs)
        result.profile.add("job_wait", waited)
        result.profile.add("driver_arrow", time.perf_counter() - started)
        return result

    def _release(self, checkpoint: DataFrame | None) -> None:
        """Drop a superstep's local-checkpoint blocks from the executors.

        Spark keeps every local checkpoint until its RDD is unpersisted; without this,
        each superstep's whole output stayed in the executors' memory (measured: 9 MB a
        superstep of 25,000 sentences, for the life of the run).
        """
        if checkpoint is None:
            return
        try:
            checkpoint._jdf.queryExecution().analyzed().rdd().unpersist(False)
        except Exception as exc:  # internal API: warn, keep running
            log.warning("could not release a superstep's checkpoint blocks: %s", exc)

    def _frame(self, columns: dict[str, list[Any]]) -> DataFrame | None:
        if not columns["task"]:
            return None
        return self.spark.createDataFrame(pa.Table.from_pydict(columns, schema=ARROW_SCHEMA))

    def _plan(
        self, frame: DataFrame | None, held: DataFrame | None, superstep: int, now: float
    ) -> _Planned | None:
        """The superstep's DataFrames (no job yet): ``held`` and ``frame``, one hop."""
        from pyspark.sql import DataFrame
        from pyspark.sql.functions import col

        frames = [f for f in (held, frame) if f is not None]
        if not frames:
            return None
        fn = partial(
            run_partition,
            run_id=self.run_id,
            plan_bytes=self._plan_bytes,
            superstep=superstep,
            now=now,
            capture=self.capture,
        )
        out = (
            reduce(DataFrame.union, frames)
            .repartitionById(self.codec.num_parts, "part")
            .mapInArrow(fn, SPARK_SCHEMA)
            .localCheckpoint(eager=False)
        )
        return _Planned(
            out, out.filter(col("kind") >= KIND_OUTCOMES), out.filter(col("kind") <= KIND_STATE)
        )

    def _discard(self, planned: _Planned | None) -> None:
        """Forget a plan that will not run (its checkpoint is registered when planned)."""
        if planned is not None:
            self._release(planned.out)

    def _launch(self, planned: _Planned, superstep: int, now: float) -> None:
        """Start a planned superstep's job on the job thread; its output is held next."""
        wanted, context = planned.wanted, self.spark.sparkContext
        step = "cleanup" if superstep == CLEANUP_SUPERSTEP else f"superstep {superstep}"
        description = f"sparkstorm {self.topology_name}: {step}"

        def job() -> tuple[pa.Table, float]:
            started = time.perf_counter()
            context.setJobDescription(description)  # per thread: this one runs every job
            return wanted.toArrow(), time.perf_counter() - started

        self._running = (self._jobs.submit(job), planned.out, superstep, now)
        self._held_before, self._held = self._held, planned.held

    def _decode(self, collected: pa.Table) -> StepResult:
        result = StepResult([], 0)
        critical = 0.0
        cols = collected.to_pydict()
        for task, kind, payload in zip(cols["task"], cols["kind"], cols["payload"], strict=True):
            if kind == KIND_OUTCOMES:  # the envelope's task is the spout task of the roots
                result.spout_rows.extend((task, tup) for tup in self.codec.tuples(payload))
            elif kind == KIND_META:
                stats, errors, captured, in_flight, pid, profile = pickle.loads(payload)
                result.stats.extend(stats)
                result.errors.extend(errors)
                result.captured.extend(captured)
                result.in_flight += in_flight
                result.profile.merge(profile)
                critical = max(critical, sum(profile.values()))
                self.worker_pids.add(pid)
        result.profile.add("partition_critical", critical)
        return result

    def _lost(self, exc: Exception, superstep: int, now: float) -> StepResult:
        text = str(exc)
        found = re.search(r"(ComponentStateError|InvalidTopologyError): (.*)", text)
        if found:  # a user error raised in the executor: the same on every retry
            kind = {"ComponentStateError": ComponentStateError}.get(
                found.group(1), InvalidTopologyError
            )
            raise kind(found.group(2).strip()) from None
        if "exception was thrown from the Python worker" in text:
            # Deterministic: the same input would raise again. Not an executor loss.
            lines = [line for line in text.splitlines() if line.strip()]
            detail = "\n".join(lines[-12:])
            msg = (
                f"superstep {superstep} raised in a Spark Python worker (is every module "
                f"your components import installed on the executors?):\n{detail}"
            )
            raise SparkStormError(msg) from None
        self._lost_in_a_row += 1
        first_line = next((line for line in text.splitlines() if line.strip()), repr(exc))
        if self._lost_in_a_row > MAX_CONSECUTIVE_LOST:
            msg = (
                f"{self._lost_in_a_row} supersteps in a row failed on Spark; giving up. "
                f"Last error: {text[-2000:]}"
            )
            raise SparkStormError(msg) from exc
        log.warning(
            "superstep %d failed on Spark (%s); its tuples in flight and bolt state "
            "are dropped, their trees will time out and be replayed",
            superstep,
            first_line[:300],
        )
        self._held = None
        error = ReportedError(
            "__system", -1, now, f"superstep {superstep} lost: {first_line[:500]}"
        )
        return StepResult([], 0, errors=[error], superstep=superstep, lost=True)

    def discard_in_flight(self) -> None:
        """Drop every tuple in flight, keeping the state snapshots (a rollback)."""
        from pyspark.sql.functions import col

        assert self._running is None, "collect the running superstep first"
        if self._held is not None:
            self._held = self._held.filter(col("kind") == KIND_STATE)
        self._held_tuples = 0

    @property
    def ui_url(self) -> str | None:
        """The Spark UI's address, when it runs."""
        url: str | None = self.spark.sparkContext.uiWebUrl
        return url

    @property
    def master(self) -> str:
        """The Spark master the session runs on (``local[*]``, ``spark://...``)."""
        return str(self.spark.sparkContext.master)

    @property
    def log_file(self) -> Path | None:
        """Where Spark's own log goes, when this engine started Spark's JVM."""
        path: Path | None = getattr(self.spark, "sparkstorm_log_file", None)
        return path

    def stop(self) -> list[ReportedError]:
        """Call ``cleanup`` on every task where its state lives; drop the rows in flight."""
        from pyspark.sql.functions import col

        errors = []
        result = self.collect()  # the driver collects a running superstep first, normally
        if result is not None:
            errors.extend(result.errors)
        if self._held is not None:
            state = self._held.filter(col("kind") == KIND_STATE)  # tuples are dropped
            columns = new_columns()
            for task, part in self.codec.part_of.items():
                append_row(columns, task, part, 0, KIND_CLEANUP, 0, b"")
            planned = self._plan(self._frame(columns), state, CLEANUP_SUPERSTEP, 0.0)
            assert planned is not None  # the cleanup frame has a row per task
            self._launch(planned, CLEANUP_SUPERSTEP, 0.0)
            cleaned = self.collect()
            errors.extend(cleaned.errors if cleaned is not None else [])
        self._release(self._checkpoint)
        self._checkpoint = None
        self._held = None
        self._jobs.shutdown(wait=True)
        self._plan_bytes.destroy()
        if self._adaptive is None:
            self.spark.conf.unset("spark.sql.adaptive.enabled")
        else:
            self.spark.conf.set("spark.sql.adaptive.enabled", self._adaptive)
        return errors
