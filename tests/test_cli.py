"""The sparkstorm command: exit codes, statistics, Ctrl-C, and messages a newcomer can act on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGIES = str(ROOT / "tests" / "cli_topologies.py")


def sparkstorm(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    return subprocess.run(
        [sys.executable, "-m", "sparkstorm.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_runs_an_example_and_writes_stats_json(tmp_path):
    stats = tmp_path / "stats.json"
    proc = sparkstorm(
        "run",
        "examples/exclamation.py",
        "--engine",
        "local",
        "--stats-json",
        str(stats),
        "--conf",
        "topology.acker.executors=2",
    )
    assert proc.returncode == 0, proc.stderr
    assert "words acked: 1,000  failed: 0" in proc.stdout
    data = json.loads(stats.read_text())
    assert data["components"]["word"]["acked"] == 1000
    assert data["components"]["__acker"]["tasks"] == 2  # --conf parsed as JSON
    assert data["components"]["exclaim1"]["executed"] == 1000
    assert data["profile_secs"]["execute"] > 0 and data["profile_secs"]["spout"] > 0


def test_main_command_runs_on_spark_with_its_ui_and_no_superstep_warnings():
    proc = sparkstorm("run", "examples/exclamation.py")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Spark UI: http://" in proc.stdout
    output = proc.stdout + proc.stderr
    assert "locally checkpointed" not in output  # Spark warned once per superstep
    assert "WARN MapPartitionsRDD" not in output


def test_no_spark_ui_turns_it_off():
    proc = sparkstorm("run", "examples/exclamation.py", "--no-spark-ui")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Spark UI" not in proc.stdout


def test_a_file_with_no_topology_is_a_usage_error():
    proc = sparkstorm("run", f"{TOPOLOGIES}:NOT_A_TOPOLOGY", "--engine", "local")
    assert proc.returncode == 2
    assert "gave int, not a Topology" in proc.stderr
    proc = sparkstorm("run", str(ROOT / "README.md"), "--engine", "local")
    assert proc.returncode == 2
    proc = sparkstorm("run", TOPOLOGIES, "--engine", "local")  # no attribute 'topology'
    assert proc.returncode == 2 and "has no attribute 'topology'" in proc.stderr


@pytest.mark.parametrize(
    ("attr", "expected"),
    [
        (
            "undeclared_subscription",
            "subscribes to stream 'default' of 'silent', which 'silent' "
            "does not declare (declared: []); declare it in "
            "'silent'.declare_output_fields",
        ),
        (
            "bad_field",
            "groups stream 'default' of 'counter' by field 'number', which that "
            "stream does not declare (declared: ['n'])",
        ),
    ],
)
def test_invalid_topology_exits_2_naming_the_culprit(attr, expected):
    proc = sparkstorm("run", f"{TOPOLOGIES}:{attr}", "--engine", "local")
    assert proc.returncode == 2
    assert expected in proc.stderr


def test_ctrl_c_drains_fails_pending_with_shutdown_and_prints_the_summary(tmp_path):
    stats = tmp_path / "stats.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sparkstorm.cli",
            "run",
            f"{TOPOLOGIES}:endless",
            "--engine",
            "local",
            "--stats-json",
            str(stats),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "interrupted" in out
    spout = json.loads(stats.read_text())["components"]["counter"]
    assert spout["acked"] > 0
    assert spout["fail_reasons"] == {"shutdown": spout["failed"]} and spout["failed"] > 0
    # every tracked message got exactly one outcome
    assert spout["acked"] + spout["failed"] == spout["emitted"]


def test_duration_stops_the_run_and_fails_pending_with_shutdown():
    from sparkstorm import run
    from tests.cli_topologies import endless

    topology, conf = endless()
    result = run(topology, conf, engine="local", duration=1.0)
    spout = result.stats["counter"]
    assert not result.interrupted and 1.0 <= result.elapsed_secs < 30
    assert spout["acked"] > 0 and spout["fail_reasons"] == {"shutdown": spout["failed"]}
    assert spout["acked"] + spout["failed"] == spout["emitted"]
