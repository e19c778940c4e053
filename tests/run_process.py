"""``sparkstorm run`` in its own process group, for tests that stop or kill it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

ROOT = Path(__file__).resolve().parents[1]


class RunProcess:
    """``sparkstorm run target`` on ``engine`` in a new process group, output in a file.

    ``engine`` is ``local``, ``spark`` (supersteps) or ``continuous`` (Spark's continuous
    mode). A run still going when its test ends is killed (``kill_leftovers``): a failed
    test's run, left registered under its name, failed the next tests that used it.
    """

    started: ClassVar[list[RunProcess]] = []
    """The runs started by the current test."""

    def __init__(
        self,
        target: str,
        engine: str,
        tmp: Path,
        *args: str,
        env: dict[str, str],
        master: str = "local[2]",
        spark_ui: bool = False,
    ) -> None:
        self.out = tmp / f"run-{uuid.uuid4().hex[:6]}.log"
        command = [
            sys.executable,
            "-m",
            "sparkstorm.cli",
            "run",
            target,
            "--engine",
            "local" if engine == "local" else "spark",
            "--quiet",
            *(["--master", master] if engine != "local" else []),
            *(["--no-spark-ui"] if engine != "local" and not spark_ui else []),
            *(
                ["--mode", "continuous" if engine == "continuous" else "superstep"]
                if engine != "local"
                else []
            ),
            *args,
        ]
        with self.out.open("w") as out:
            self.process = subprocess.Popen(
                command,
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        RunProcess.started.append(self)

    def output(self) -> str:
        return self.out.read_text()

    def wait(self, timeout: float = 120) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"sparkstorm run hung for {timeout:g}s:\n{self.output()[-2000:]}")

    def stop(self) -> int:
        """Ctrl-C: a graceful stop."""
        os.killpg(self.process.pid, signal.SIGINT)
        return self.wait()

    def kill(self) -> None:
        """SIGKILL of the whole process group: the driver, Spark's JVM and its workers."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def until(
        self,
        condition: Callable[[], bool],
        what: str,
        timeout: float = 120,
        detail: Callable[[], str] = str,
    ) -> None:
        """Wait for ``condition``; fail with the run's output and ``detail()`` if it never
        holds or the run ends first."""
        deadline = time.monotonic() + timeout
        while not condition():
            if self.process.poll() is not None:
                said = f"{detail()}\n{self.output()[-2000:]}"
                pytest.fail(f"sparkstorm run ended before {what}: {said}")
            if time.monotonic() > deadline:
                said = f"{detail()}\n{self.output()[-2000:]}"
                self.kill()
                pytest.fail(f"no {what} after {timeout:g}s: {said}")
            time.sleep(0.05)


def kill_leftovers() -> None:
    """SIGKILL every run the test started that still runs (its test failed midway)."""
    for run in RunProcess.started:
        if run.process.poll() is None:
            run.kill()
    RunProcess.started.clear()


def spark_python_workers(root: int) -> list[int]:
    """The Python worker processes forked by PySpark's daemon under process ``root``."""
    from benchmarks.rss import process_tree

    tree = process_tree(root)
    daemons = {
        pid for pid in tree if b"pyspark.daemon" in Path(f"/proc/{pid}/cmdline").read_bytes()
    }
    return sorted(pid for pid, stat in tree.items() if int(stat[1]) in daemons)
