"""Beyond one process: executor JVMs apart from the driver, and one of them killed mid-run.

The test runs tests/spark/cluster_job.py in a subprocess: a process holds one
SparkContext, and the suite's shared one is ``local[2]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
MESSAGES = 200


def run_job(*args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.spark.cluster_job", "--messages", str(MESSAGES), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_killed_executors_lose_nothing_and_stateful_bolts_count_each_message_once(
    redis_prefix, tmp_path
):
    """Bolts run in two executor JVMs apart from the driver; one is killed mid-run. Then,
    on the same cluster, a sink counts ids in Redis state, and another executor is killed:
    after it, each id is counted exactly once. Before both, a Python worker dies and Spark
    runs its task again within the superstep's job: the run says so."""
    marker = tmp_path / "died"
    runs = run_job(
        "--kill-after", "60", "--state-prefix", redis_prefix, "--retry-marker", str(marker)
    )
    result = runs["retried"]
    assert marker.exists(), "no sink task ran"
    assert result["acked"] == list(range(40))
    said = [m for m in result["lost_supersteps"] if "again (attempt 2)" in m]
    assert said, result["lost_supersteps"]  # the retried attempt is a recovered loss, said
    assert "its tuples were executed again" in said[0]

    result = runs["plain"]
    assert result["driver_pid"] not in result["worker_pids"]
    assert len(result["worker_pids"]) >= 2  # Python workers of both executors ran tasks
    assert result["killed"] > 0, "no executor JVM was found to kill"
    assert result["lost_supersteps"], "the kill did not cost a superstep"
    # every message ends acked: what the dead executor held timed out and was replayed
    assert result["acked"] == list(range(MESSAGES))
    assert result["reasons"].get("timeout", 0) > 0
    assert set(result["reasons"]) <= {"timeout"}
    assert result["killed"] not in result["executor_pids_at_end"]

    result = runs["stateful"]
    assert result["killed"] > 0, "no executor JVM was found to kill"
    assert result["killed"] != runs["plain"]["killed"]
    assert result["lost_supersteps"], "the kill did not cost a superstep"
    assert result["acked"] == list(range(MESSAGES))
    assert result["reasons"].get("rollback", 0) > 0  # the lost superstep rolled back at once
    assert set(result["reasons"]) <= {"timeout", "rollback"}
    assert result["committed_counts"] == {str(i): 1 for i in range(MESSAGES)}
