"""The examples run as the docs write their commands: from the repository root, by path.

Issue 56, defect 1: ``sparkstorm run examples/arrow_word_count.py`` failed with
``No module named 'examples'`` (a file target put only its own folder on ``sys.path``),
while the tests, which set ``PYTHONPATH``, passed. So these run the installed
``sparkstorm`` command with no ``PYTHONPATH``, as a new user's shell does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run_process import ROOT

EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.py") if p.name != "__init__.py")
BROKERS = {"kafka_word_count.py", "kafka_arrow_word_count.py", "rabbitmq_word_count.py"}
"""Examples that need a broker: their import is checked, as the command makes it."""


def as_a_user(
    *command: str, timeout: float = 120, cwd: Path = ROOT, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``command`` run as a new user's shell runs it: no ``PYTHONPATH`` (or ``path``), in
    ``cwd``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if path is not None:
        env["PYTHONPATH"] = path
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.parametrize("example", sorted(set(EXAMPLES) - BROKERS))
def test_each_example_runs_by_its_path_from_the_repository_root(example):
    sparkstorm = shutil.which("sparkstorm")
    assert sparkstorm, "the sparkstorm command is not installed: pip install -e ."
    done = as_a_user(
        sparkstorm,
        "run",
        f"examples/{example}",
        "--engine",
        "local",
        "--duration",
        "1.5",
        "--quiet",
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.mark.parametrize("example", sorted(BROKERS))
def test_a_broker_example_imports_by_its_path_from_the_repository_root(example):
    code = (
        "import sys; from sparkstorm.cli.loading import load_module; "
        "load_module(sys.argv[1]); print('imported')"
    )
    # -P: the current directory is not put on sys.path for us, as for the command
    done = as_a_user(sys.executable, "-P", "-c", code, f"examples/{example}")
    assert done.stdout.strip() == "imported", done.stderr[-2000:]
