"""Every command README.md and docs/ give runs as written, from the repository root.

Issue 56: a newcomer copies commands from the docs. Each ``sparkstorm run`` of a file
in the repository runs exactly as written (Spark ``local[*]``, the default), with the
installed ``sparkstorm`` and no ``PYTHONPATH``; the getting-started file is written
from its page and run as the page says; each ``python -m benchmarks...`` line's flags
are parsed by that benchmark's own parser (the benchmarks themselves take minutes:
``tests/test_benchmarks.py`` runs them small); the Kafka publisher, without a broker,
says so in one line instead of librdkafka's flood.
"""

from __future__ import annotations

import json
import re
import shlex
import socket
import sys

import pytest

from tests.examples.test_commands import as_a_user
from tests.run_process import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def documented(pattern: str) -> list[str]:
    """The commands (in code blocks or inline code) of every page that match ``pattern``."""
    found: list[str] = []
    for page in PAGES:
        text = page.read_text()
        fenced = r"```(\w*)\n(.*?)```"
        prose = re.sub(fenced, "", text, flags=re.S)
        inline = [re.sub(r"\s+", " ", code) for code in re.findall(r"`([^`]+)`", prose)]
        blocks = [
            line.strip().removeprefix("$ ")
            for kind, block in re.findall(fenced, text, re.S)
            if kind in ("", "bash", "sh", "shell")
            for line in block.splitlines()
        ]
        for command in [*inline, *blocks]:
            command = command.split("  #")[0].split(" # ")[0].strip()
            for part in command.split(" && "):
                if re.fullmatch(pattern, part) and part not in found:
                    found.append(part)
    return found


RUNS = documented(r"sparkstorm run examples/\S+\.py")
BENCHMARKS = documented(r"python -m benchmarks(\.\w+)?( .*)?")


def test_the_docs_give_the_commands_these_tests_run():
    assert "sparkstorm run examples/word_count.py" in RUNS  # README's first command
    assert "sparkstorm run examples/arrow_word_count.py" in RUNS
    assert len(BENCHMARKS) >= 10, BENCHMARKS


@pytest.mark.parametrize("command", [c for c in RUNS if "kafka" not in c])
def test_a_documented_run_runs_as_written(command):
    done = as_a_user(*shlex.split(command), timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "finished after" in done.stdout, done.stdout[-2000:]


def test_the_getting_started_file_runs_as_the_page_says(tmp_path):
    page = (ROOT / "docs" / "getting-started.md").read_text()
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    (tmp_path / "squares.py").write_text(code)
    assert "sparkstorm run squares.py --until-idle" in documented(r"sparkstorm run squares\.py.*")
    done = as_a_user("sparkstorm", "run", "squares.py", "--until-idle", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"numbers\s+100\s+100\s+0\s+100\s+0", done.stdout), done.stdout[-2000:]


PARSED_ONLY = """
import argparse, json, runpy, sys

parse = argparse.ArgumentParser.parse_args

class Parsed(Exception):
    pass

def parsed(self, args=None, namespace=None):
    parse(self, args, namespace)  # exits 2, saying why, on a flag it does not take
    raise Parsed

argparse.ArgumentParser.parse_args = parsed
said = {}
for command in json.loads(sys.argv[1]):
    words = command.split("\\0")
    sys.argv = words[2:]
    try:
        runpy.run_module(words[2], run_name="__main__", alter_sys=True)
        said[command] = "ran without parsing its flags"
    except Parsed:
        said[command] = "parsed"
    except SystemExit as exc:
        said[command] = f"exit {exc.code}"
print(json.dumps(said))
"""


def test_every_documented_benchmark_takes_its_flags():
    """Each line's flags, by that benchmark's own parser (all in one process: imports
    once); the benchmark does not run."""
    commands = [
        "\0".join(shlex.split(c.replace("[--engine E]", "--engine local"))) for c in BENCHMARKS
    ]
    done = as_a_user(sys.executable, "-c", PARSED_ONLY, json.dumps(commands), timeout=120)
    said = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
    wrong = {c.replace("\0", " "): s for c, s in said.items() if s != "parsed"}
    assert said and not wrong, (wrong, done.stderr[-2000:])


def test_the_kafka_publisher_without_a_broker_says_so_in_one_line():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = "python examples/kafka_word_count.py --publish 1000"
    assert command in documented(r"python examples/kafka_word_count\.py.*")
    done = as_a_user(*shlex.split(command), "--servers", f"127.0.0.1:{port}", timeout=60)
    said = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode != 0
    assert len(said) <= 2, said
    assert f"no Kafka broker answers at 127.0.0.1:{port}" in said[-1]


def test_sigterm_during_sparks_start_up_exits_130_saying_so(tmp_path):
    """As ``--help`` says: 130 for Ctrl-C or SIGTERM, start-up included (it was 143)."""
    import os
    import signal
    import subprocess
    import time

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["SPARKSTORM_RUN_DIR"] = str(tmp_path)
    process = subprocess.Popen(
        ["sparkstorm", "run", "examples/word_count.py", "--no-ui"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    time.sleep(3.0)  # imports done, Spark starting (it takes 5-10 s)
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 130, out[-2000:]
    assert "sparkstorm: interrupted" in out, out[-2000:]
    assert "finished after" not in out  # it was stopped during its start-up


def test_a_run_whose_output_is_a_pipe_says_how_it_stands_every_ten_seconds(tmp_path):
    """Not a terminal: no live table, but a progress line every 10 s (before, nothing
    between the start lines and the final table)."""
    done = as_a_user(
        "sparkstorm",
        "run",
        "tests.cli_topologies:steady",
        "--engine",
        "local",
        "-t",
        "11",
        "--no-ui",
        cwd=ROOT,
        timeout=120,
        path=str(ROOT),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    shape = r"^cli_topologies: t=(\d+)s  spouts emitted ([\d,]+) acked"
    lines = re.findall(shape, done.stdout, re.M)
    assert [t for t, _ in lines][:1] == ["10"], done.stdout[-2000:]  # then one as it stops
    assert int(lines[0][1].replace(",", "")) > 0


@pytest.mark.parametrize(
    "example", ["kafka_arrow_word_count.py", "kafka_word_count.py", "rabbitmq_word_count.py"]
)
def test_an_example_runs_as_its_docstring_says_from_any_folder(example, tmp_path):
    """Issue 67, item 1: ``python examples/kafka_arrow_word_count.py --publish 1000``
    failed with ``No module named 'examples'`` (its imports ran before anything put the
    repository on the path). Its imports and flags, from another folder, as a file."""
    path = ROOT / "examples" / example
    assert f"python examples/{example}" in path.read_text().split("\n\n")[1]
    done = as_a_user(sys.executable, str(path), "--help", cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--publish" in done.stdout


def test_a_run_by_path_from_another_folder_imports_the_examples_siblings(tmp_path):
    """``sparkstorm run ../clone/examples/arrow_word_count.py`` failed the same way."""
    done = as_a_user(
        "sparkstorm",
        "run",
        str(ROOT / "examples" / "arrow_word_count.py"),
        "--engine",
        "local",
        "--duration",
        "1",
        "--quiet",
        "--no-ui",
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "finished after" in done.stdout
