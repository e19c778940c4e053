"""Engines that run bolt and acker tasks: ``local`` (in-process) and ``spark`` (PySpark)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkstorm.engines.base import Engine

if TYPE_CHECKING:
    from sparkstorm.engines.continuous.driver import ContinuousEngine

ENGINES = ("local", "spark")


def make_engine(
    name: str, *, spark: Any = None, master: str | None = None, spark_ui: bool = True
) -> Engine:
    """Create an engine by name; ``spark`` takes a SparkSession or creates one on ``master``.

    ``spark_ui`` turns the Spark UI of a session created here on or off.
    """
    if name == "local":
        from sparkstorm.engines.local import LocalEngine

        return LocalEngine()
    if name == "spark":
        from sparkstorm.engines.spark import SparkEngine

        return SparkEngine(spark=spark, master=master, ui=spark_ui)
    msg = f"unknown engine {name!r}; choose one of {list(ENGINES)}"
    raise ValueError(msg)


def driver_address(engine: str, conf: dict[str, Any], spark: Any, master: str | None) -> str:
    """The address the tasks of a run reach its driver's process at, known before it starts.

    Loopback where every task runs on this machine (the local engine, a ``local`` or
    ``local-cluster`` master); else ``spark.driver.host`` (the session's, or the run's
    setting) or this host's name, as Spark's executors reach the driver.
    """
    import socket

    if spark is not None:
        master = str(spark.sparkContext.master)
    if engine == "local" or (master or "local[*]").startswith("local"):
        return "127.0.0.1"
    if spark is not None:
        from sparkstorm.engines.spark.session import driver_host

        return driver_host(spark)
    return conf.get("spark.driver.host") or socket.gethostname()


def make_continuous_engine(
    conf: dict[str, Any], *, spark: Any = None, master: str | None = None, spark_ui: bool = True
) -> ContinuousEngine:
    """The Spark engine in its continuous mode, on ``spark`` or a session made on ``master``.

    One worker per ``sparkstorm.spark.partitions`` (default: the task slots of a local or
    local-cluster master, else Spark's default parallelism), each a task of one barrier
    stage.
    """
    import uuid

    from sparkstorm.config import SPARKSTORM_SPARK_PARTITIONS, spark_settings
    from sparkstorm.engines.continuous.driver import ContinuousEngine
    from sparkstorm.engines.spark.continuous import BarrierLauncher, local_slots
    from sparkstorm.engines.spark.session import create_session, driver_host

    session = spark or create_session(
        master or "local[*]", spark_settings(conf), ui=spark_ui, sql=False
    )
    context = session.sparkContext
    slots = local_slots(str(context.master)) or context.defaultParallelism
    workers = conf[SPARKSTORM_SPARK_PARTITIONS] or slots
    launcher = BarrierLauncher(session, uuid.uuid4().hex)
    host = "127.0.0.1" if launcher.loopback else driver_host(session)
    return ContinuousEngine(launcher, host, workers)
