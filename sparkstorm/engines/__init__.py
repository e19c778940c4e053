"""Engines that run bolt and acker tasks: ``local`` (in-process) and ``spark`` (PySpark)."""

from __future__ import annotations

from typing import Any

from sparkstorm.engines.base import Engine

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
