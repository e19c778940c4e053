"""Starting the Spark session: a Ctrl-C during it ends the run in one line; Spark SQL only
when used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("interrupted_start.py")
ROOT = SCRIPT.parents[2]


def test_ctrl_c_once_the_context_is_up_stops_the_session_without_py4j_tracebacks():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 130, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "py4j" not in proc.stderr, proc.stderr
    # the session the interrupt came during was stopped, not left running
    assert proc.stdout.strip() == "interrupted None", proc.stdout


def test_sql_on_demand_has_the_context_at_once_and_starts_spark_sql_when_asked(spark):
    """The continuous mode's session: no Spark SQL until something other than the
    SparkContext is asked of it."""
    from pyspark.sql import SparkSession

    from sparkstorm.engines.spark.session import SqlOnDemand

    on_demand = SqlOnDemand(SparkSession.builder)
    assert on_demand.sparkContext is spark.sparkContext  # the running one, not a second
    assert on_demand._session is None
    assert on_demand.createDataFrame([(1,), (2,)], ["n"]).count() == 2
    assert on_demand._session is not None  # made on first use, and kept
    assert on_demand.sparkContext is on_demand._session.sparkContext
