"""Starting the Spark session: a Ctrl-C during it ends the run in one line; Spark SQL only
when used."""

from __future__ import annotations

import logging
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


def test_py4j_writes_no_gateway_token_even_at_debug(spark, caplog):
    """Issue 54, defect 7: py4j's DEBUG line of its authentication holds the token."""
    gateway = spark.sparkContext._gateway
    client = gateway._gateway_client
    token = client.java_parameters.auth_token  # PySpark's pinned-thread ClientServer
    assert token, "the gateway authenticates its connections"
    with caplog.at_level(logging.DEBUG, logger="py4j"):
        connection = client._create_new_connection()  # a new connection authenticates
        connection.close()
    said = "\n".join(r.getMessage() for r in caplog.records)
    assert "Command to send: (" in said
    assert token not in said


DEBUG_RUN = """
import logging, sys
logging.basicConfig(filename=sys.argv[1], level=logging.DEBUG)  # a user's module's
from sparkstorm import TopologyBuilder, run
from sparkstorm.testing import FixedTupleSpout

def keep_token(runtime):
    from pyspark import SparkContext
    client = SparkContext._active_spark_context._gateway._gateway_client
    open(sys.argv[2], "w").write(client.java_parameters.auth_token)

builder = TopologyBuilder()
builder.set_spout("s", FixedTupleSpout([["a"], ["b"]]))
run(builder.create_topology(), {"sparkstorm.spark.mode": "superstep"}, "spark",
    master="local[1]", on_start=keep_token, spark_ui=False)
"""


def test_a_run_logging_at_debug_to_a_file_writes_no_py4j_secret(tmp_path):
    """Issue 65, defect 2: PySpark sends the token again to build its accumulator, and
    py4j logged that command whole; answers carry per-call socket secrets."""
    log_file, token_file = tmp_path / "debug.log", tmp_path / "token"
    done = subprocess.run(
        [sys.executable, "-c", DEBUG_RUN, str(log_file), str(token_file)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    token, logged = token_file.read_text(), log_file.read_text()
    assert len(token) >= 32
    assert token not in logged
    assert "Command to send: (" in logged and "Answer received: (" in logged  # DEBUG on
