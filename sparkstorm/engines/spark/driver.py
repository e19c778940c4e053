"""The driver side of the ``spark`` engine: one Spark job per superstep.

Per superstep the driver unions the rows in flight, the task state rows and its new
tick/spout rows; ``repartitionById`` deals the tasks over as many partitions as Spark
has cores (``sparkstorm.spark.partitions``), and ``mapInArrow`` runs each partition's
bolt and acker tasks (``executor.run_partition``). One partition per core rather than
per task: every Python partition costs a worker round trip (~60 ms here), so fewer,
fuller partitions win. The output is local-checkpointed (lazily: it is materialized by
the same job that collects the driver's rows), which cuts the lineage every
superstep. Only the acker's outcomes and per-partition metrics reach the driver;
tuples in flight and state stay in the executors.

If a superstep's job fails (an executor was lost), its rows in flight and the state
rows are dropped, as tuples die with a Storm worker: their trees time out and the
spouts replay them.
"""

from __future__ import annotations

import logging
import pickle
import re
import socket
import time
import uuid
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial, reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pyarrow as pa

from sparkstorm.config import (
    SPARKSTORM_SPARK_PARTITIONS,
    SPARKSTORM_SPARK_PIPELINE,
    SPARKSTORM_WATCHDOG_SECS,
    TOPOLOGY_NAME,
    spark_settings,
)
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
)
from sparkstorm.engines.spark.blocked_calls import BlockedCall, BlockedCallListener
from sparkstorm.engines.spark.executor import CLEANUP_SUPERSTEP, run_partition
from sparkstorm.engines.spark.session import create_session
from sparkstorm.engines.user_code import user_code
from sparkstorm.engines.wire import PartitionReport, StepResult
from sparkstorm.errors import ComponentStateError, InvalidTopologyError, SparkStormError
from sparkstorm.reliability.base_collector import ReportedError
from sparkstorm.tasks.log_ring import relog
from sparkstorm.tasks.pickling import dumps
from sparkstorm.tasks.process_usage import usage_row
from sparkstorm.tasks.task_runner import copy_component
from sparkstorm.tasks.watchdog import blocked_message
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.streams import SYSTEM_COMPONENT_ID, SYSTEM_TASK_ID
from sparkstorm.topology.tuple import Row

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)


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
        self._seen: dict[tuple[str, int], PartitionReport] = {}
        """Each Python worker's latest report, by (host, process)."""
        self._held: DataFrame | None = None  # tuples in flight and state snapshots
        self._held_before: DataFrame | None = None  # what the running job reads
        self._checkpoint: DataFrame | None = None  # the output that _held reads
        self._held_tuples = 0  # how many of the held rows' tuples are in flight
        self._running: tuple[Future[tuple[pa.Table, float]], DataFrame, int, float] | None = None
        self._jobs = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkstorm-job")
        self.blocked: str | None = None
        """A call in an executor reported blocked, until its superstep ends."""
        self._cancelled: str | None = None
        self._listener: BlockedCallListener | None = None
        self.debug_shares: dict[str, float] | None = None
        """Storm UI's Debug, once an operator used it: each component's share noted."""
        self.log_levels: dict[str, str] | None = None
        """The loggers an operator set, once one did: the executors set them too."""
        self._logs: dict[tuple[str, int], deque[tuple[float, str]]] = {}
        """Each Python worker's latest log records, by (host, process)."""

    def workers_seen(self) -> list[dict[str, Any]]:
        """The Spark Python workers that ran supersteps: where, what they ran last, usage."""
        rows = []
        for i, ((host, pid), report) in enumerate(sorted(self._seen.items())):
            tasks = sorted((s.component, s.task) for s in report.stats)
            rows.append(
                {
                    "worker": i,
                    "host": host,
                    "pid": pid,
                    "tasks": [f"{component}:{task}" for component, task in tasks],
                    **usage_row(report.usage, None),
                }
            )
        return rows

    def logs_seen(self) -> dict[int, list[tuple[float, str]]]:
        """Each Python worker's latest log records, by its number in :meth:`workers_seen`."""
        return {i: list(self._logs.get(key, ())) for i, key in enumerate(sorted(self._seen))}

    def set_log_levels(self, levels: dict[str, str]) -> None:
        """Storm UI's "Change log level": the loggers set now, for the next supersteps."""
        if levels or self.log_levels:
            self.log_levels = dict(levels)

    def set_debug(self, shares: dict[str, float]) -> None:
        """Storm UI's Debug: each superstep's tasks note this share of their calls."""
        self.debug_shares = dict(shares)

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
        plan.deal(parts)
        self.codec = RowCodec(plan)
        self.capture = capture
        self.run_id = uuid.uuid4().hex
        self._pipeline = bool(plan.conf[SPARKSTORM_SPARK_PIPELINE])
        for bolt in plan.topology.bolts:  # a component Spark cannot ship, named now
            copy_component(bolt.obj, bolt.component_id)
        self._listener = BlockedCallListener(self._listen_host(), self.run_id, self._on_blocked)
        self._watch = (*self._listener.address, plan.conf[SPARKSTORM_WATCHDOG_SECS])
        payload = (user_code(), dumps((plan.for_executors(), seed)))
        self._plan_bytes = self.spark.sparkContext.broadcast(payload)

    def _listen_host(self) -> str:
        """Where executors reach the driver: loopback locally, else Spark's driver address."""
        if self.master.startswith("local"):
            return "127.0.0.1"
        host: str | None = self.spark.sparkContext.getConf().get("spark.driver.host")
        return host or socket.gethostname()

    def _on_blocked(self, report: BlockedCall) -> None:
        self.blocked = report.call
        where = f" in a Spark executor (Python worker {report.pid} on {report.host})"
        stack = f"; it is at:\n{report.stack}" if report.stack else ""
        log.warning("%s%s", blocked_message(report.call, report.secs, where), stack)

    def interrupt(self) -> None:
        """Cancel the running superstep's job: a call in it blocked, and the run stops."""
        if self._running is not None:
            self._cancelled = self.blocked or "a call"
            self.spark.sparkContext.cancelJobGroup(self.run_id)

    def superstep(self, rows: list[Row], superstep: int, now: float) -> StepResult:
        """Deliver everything in flight in one Spark job; collect only what the driver needs.

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
            self.blocked = None
            self._held = self._held_before  # the failed job's output is no one's input
            self._held_tuples = 0
            self._release(out)
            self._release(self._checkpoint)
            self._checkpoint = None
            return self._lost(exc, superstep, now)
        except BaseException:  # a stop signal while waiting: the job runs on, collect it later
            self._running = (future, out, superstep, now)
            raise
        self.blocked = None
        waited = time.perf_counter() - waited
        self._release(self._checkpoint)  # the superstep before: nothing reads it any more
        self._checkpoint = out
        started = time.perf_counter()
        result = self._decode(collected)
        result.superstep = superstep
        result.errors.extend(self._retried(result.retried, superstep, now))
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
        """The superstep's DataFrames (no job yet): ``held`` and ``frame``, delivered."""
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
            watch=self._watch,
            debug_shares=self.debug_shares,
            log_levels=self.log_levels,
        )
        out = (
            reduce(DataFrame.union, frames)
            .repartitionById(self.plan.workers, "part")
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
            # per thread (this one runs every job); the group lets the stop cancel a job
            context.setJobGroup(self.run_id, description, interruptOnCancel=True)
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
                report: PartitionReport = pickle.loads(payload)
                result.stats.extend(report.stats)
                result.errors.extend(report.errors)
                result.captured.extend(report.captured)
                result.debug.extend(report.debug)
                result.in_flight += report.in_flight
                result.profile.merge(report.profile)
                critical = max(critical, sum(report.profile.values()))
                self.worker_pids.add(report.pid)
                if report.attempt:
                    result.retried.append((report.partition, report.attempt))
                self._seen[report.host, report.pid] = report
                if report.log_lines:
                    now = time.time()
                    kept = self._logs.setdefault((report.host, report.pid), deque(maxlen=1000))
                    kept.extend((now, line) for line in report.log_lines)
                    relog(f"Python worker {report.pid} on {report.host}", report.log_lines)
        result.profile.add("partition_critical", critical)
        return result

    def _retried(
        self, retried: list[tuple[int, int]], superstep: int, now: float
    ) -> list[ReportedError]:
        """A recovered error for each partition Spark ran again within the superstep's job.

        Spark retries a task whose attempt died (a Python worker killed, an executor
        lost) before it fails the job: the job then succeeds, and the retry ran the
        partition's tuples again (at least once: a bolt's side effects may repeat). Said,
        as every recovered loss is.
        """
        errors = []
        for partition, attempt in sorted(retried):
            message = (
                f"superstep {superstep}: Spark ran partition {partition} again (attempt "
                f"{attempt + 1}), an earlier attempt was lost (a Python worker or an executor "
                "died); its tuples were executed again"
            )
            log.warning("%s", message)
            errors.append(
                ReportedError(SYSTEM_COMPONENT_ID, SYSTEM_TASK_ID, now, message, recovered=True)
            )
        return errors

    def _lost(self, exc: Exception, superstep: int, now: float) -> StepResult:
        text = str(exc)
        if self._cancelled is not None:  # by the stop, not lost: its tuples die, state stays
            self.discard_in_flight()
            message = f"superstep {superstep} cancelled at the stop: {self._cancelled} had blocked"
            self._cancelled = None
            error = ReportedError(SYSTEM_COMPONENT_ID, SYSTEM_TASK_ID, now, message)
            return StepResult([], 0, errors=[error], superstep=superstep, lost=True)
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
        first_line = next((line for line in text.splitlines() if line.strip()), repr(exc))
        log.warning(
            "superstep %d failed on Spark (%s); its tuples in flight and bolt state "
            "are dropped, their trees will time out and be replayed",
            superstep,
            first_line[:300],
        )
        self._held = None
        error = ReportedError(
            SYSTEM_COMPONENT_ID,
            SYSTEM_TASK_ID,
            now,
            f"superstep {superstep} lost: {first_line[:500]}",
            recovered=True,
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

    def call_under_way(self) -> tuple[str, Any] | None:
        """None: bolt calls run in executors, which report blocked ones themselves."""
        return None

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
            for task, part in self.plan.worker_of.items():
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
        if self._listener is not None:
            self._listener.close()
        self._plan_bytes.destroy()
        if self._adaptive is None:
            self.spark.conf.unset("spark.sql.adaptive.enabled")
        else:
            self.spark.conf.set("spark.sql.adaptive.enabled", self._adaptive)
        return errors
