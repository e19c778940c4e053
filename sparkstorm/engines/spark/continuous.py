"""The continuous mode's workers as one long-running Spark barrier stage.

``rdd.barrier().mapPartitions`` launches one Spark task per worker, all together or
none (gang scheduling), as PySpark's TorchDistributor runs cooperating Python processes.
Each task binds its data socket, tells the driver where, gets every other worker's
address back from it (``run_worker`` says why not ``BarrierTaskContext.allGather``), and
runs its worker until the driver shuts the run down; the Python worker belongs to the
task for the whole run. The job runs in a thread of the driver, in the run's job group,
so that the Spark UI shows it as one job and a stop can cancel it.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from pathlib import Path
from typing import Any

from sparkstorm.engines.continuous.driver import WorkerSetup, WorkersLost, run_worker
from sparkstorm.errors import SparkStormError
from sparkstorm.tasks.log_ring import LogRing

log = logging.getLogger(__name__)


def _worker_body(setup: WorkerSetup, loopback: bool) -> Any:
    def body(_: Any) -> Any:
        from pyspark import BarrierTaskContext

        context = BarrierTaskContext.get()
        index = context.partitionId()
        # loopback, or the executor's own address: reachable by its peers, not by every
        # interface of the machine
        address = context.getTaskInfos()[index].address.rsplit(":", 1)[0]
        host = "127.0.0.1" if loopback else address
        ring = LogRing()  # this Python worker's records, for the page's worker log
        logging.getLogger().addHandler(ring)
        try:
            run_worker(setup, index, host, ring)
        finally:
            logging.getLogger().removeHandler(ring)
        return iter([])

    return body


def local_slots(master: str) -> int | None:
    """Task slots of a ``local[N]``, ``local[*]`` or ``local-cluster[E,C,M]`` master, else None."""
    if master == "local":
        return 1
    found = re.fullmatch(r"local\[(\*|\d+)(?:,\s*\d+)?\]", master)
    if found:
        return os.cpu_count() or 1 if found.group(1) == "*" else int(found.group(1))
    found = re.fullmatch(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]", master)
    return int(found.group(1)) * int(found.group(2)) if found else None


def _check_can_run(context: Any, master: str, workers: int) -> None:
    conf = context.getConf()
    if conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        msg = (
            "the continuous mode runs its workers as one barrier stage, which Spark refuses "
            "under dynamic allocation: set spark.dynamicAllocation.enabled=false for this "
            "application, or use sparkstorm.spark.mode=superstep"
        )
        raise SparkStormError(msg)
    slots = local_slots(master)
    if slots is not None and workers > slots:
        msg = (
            f"the continuous mode needs {workers} task slots at once (one per worker: "
            f"sparkstorm.spark.partitions) and master {master} has {slots}; ask for at most "
            f"{slots} partitions, or run on more cores"
        )
        raise SparkStormError(msg)


def loss_reason(failure: str) -> tuple[str, int | None]:
    """The one line that says why Spark ended the stage, and the lost worker's index.

    Spark's error is a Py4J stack whose first line names only the call. A barrier
    stage's task index is its worker's index: Spark says ``Task 1 in stage`` or
    ``ResultTask(3, 1)`` (stage 3, partition 1).
    """
    found = re.search(r"Task (\d+)(?:\.\d+)? in stage|ResultTask\(\d+, (\d+)\)", failure)
    worker = None if found is None else int(found.group(1) or found.group(2))
    for pattern in (
        r"Python worker exited unexpectedly \(crashed\)",
        r"Most recent failure reason: (.*)",
        r"Job aborted due to stage failure: (.*)",
        r"Job \d+ cancelled.*",
    ):
        said = re.search(pattern, failure)
        if said is not None:
            reason = said.group(1) if said.groups() else said.group(0)
            where = f"worker {worker}: " if worker is not None else ""
            return f"{where}{reason.strip()[:300]}", worker
    lines = [line.strip() for line in failure.splitlines() if line.strip()]
    return (lines[0][:300] if lines else "the Spark job ended"), worker


class BarrierLauncher:
    """Runs the workers as the tasks of one barrier stage of ``spark``."""

    def __init__(self, spark: Any, run_id: str) -> None:
        self.spark = spark
        self.run_id = run_id
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    @property
    def master(self) -> str:
        """The Spark master the session runs on."""
        return str(self.spark.sparkContext.master)

    @property
    def ui_url(self) -> str | None:
        """The Spark UI's address, when it runs."""
        url: str | None = self.spark.sparkContext.uiWebUrl
        return url

    @property
    def log_file(self) -> Path | None:
        """Where Spark's own log goes, when sparkstorm started Spark's JVM."""
        path: Path | None = getattr(self.spark, "sparkstorm_log_file", None)
        return path

    @property
    def loopback(self) -> bool:
        """Whether every worker runs on this machine (a local or local-cluster master)."""
        return self.master.startswith("local")

    def launch(self, setup: WorkerSetup) -> None:
        """Submit the stage from a thread; the thread ends when the workers do.

        Refuses at once what a barrier stage would wait on or fail with much later:
        dynamic allocation, and (on a local master, whose slots are known) more workers
        than task slots.
        """
        context = self.spark.sparkContext
        _check_can_run(context, self.master, setup.workers)
        self._failure = None
        rdd = context.parallelize(range(setup.workers), setup.workers)
        stage = rdd.barrier().mapPartitions(_worker_body(setup, self.loopback))

        def job() -> None:
            context.setJobGroup(self.run_id, "sparkstorm continuous workers", True)
            try:
                stage.collect()
            except BaseException as exc:
                if self._thread is threading.current_thread():  # not a stage replaced since
                    lost = WorkersLost(*loss_reason(str(exc)))
                    lost.__cause__ = exc
                    self._failure = lost

        self._thread = threading.Thread(target=job, name="sparkstorm-workers", daemon=True)
        self._thread.start()

    def failure(self) -> BaseException | None:
        """The error the stage ended with, or None."""
        return self._failure

    def join(self, timeout: float) -> None:
        """Wait for the stage to end; cancel it if it does not in ``timeout`` seconds."""
        if self._thread is None:
            return
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("the continuous workers did not end in time; cancelling their job")
            self.spark.sparkContext.cancelJobGroup(self.run_id)
            self._thread.join(10)

    def cancel(self) -> None:
        """Cancel the stage's job: Spark kills the tasks' Python workers."""
        self.spark.sparkContext.cancelJobGroup(self.run_id)

    def slots(self) -> int | None:
        """A local master's task slots, else the tasks the cluster's executors can run now.

        On a cluster, the count Spark itself checks a barrier stage against: its
        executors' cores over ``spark.task.cpus``, updated as executors come and go (a
        lost host's go once the master notices). Spark's default parallelism is no
        substitute: it is never below 2.
        """
        slots = local_slots(self.master)
        if slots is not None:
            return slots
        context = self.spark.sparkContext._jsc.sc()
        profile = context.resourceProfileManager().defaultResourceProfile()
        return int(context.maxNumConcurrentTasks(profile))
