"""``sparkstorm run`` in a streamparse project, as a streamparse user types it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.scenarios.test_streamparse_projects import PROJECTS, render_quickstart

HIDE_STREAMPARSE = textwrap.dedent(
    """
    # A machine without streamparse: the path finders find neither it nor pystorm.
    import importlib.machinery, importlib.util, sys
    finder = importlib.machinery.PathFinder
    find_spec = finder.find_spec.__func__
    def hidden(cls, name, path=None, target=None):
        if name.partition(".")[0] in ("streamparse", "pystorm"):
            return None
        return find_spec(cls, name, path, target)
    finder.find_spec = classmethod(hidden)
    assert importlib.util.find_spec("streamparse") is None
    from sparkstorm.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def sparkstorm(folder: Path, *args: str, hide_streamparse: bool = False):
    command = [sys.executable, "-m", "sparkstorm", "run", *args]
    if hide_streamparse:
        command = [sys.executable, "-c", HIDE_STREAMPARSE, "run", *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_quickstart(tmp_path_factory.mktemp("cli") / "wordcount")


@pytest.mark.parametrize("hide_streamparse", [False, True], ids=["installed", "not-installed"])
def test_the_quickstart_runs_unchanged_with_or_without_streamparse(quickstart, hide_streamparse):
    stats = quickstart / "stats.json"
    args = ["topologies/wordcount.py", "--engine", "local", "-t", "1", "--stats-json", str(stats)]
    done = sparkstorm(quickstart, *args, "--no-ui", hide_streamparse=hide_streamparse)
    assert done.returncode == 0, done.stderr
    components = json.loads(stats.read_text())["components"]
    emitted = components["word_spout"]["emitted"]
    assert emitted > 0
    assert components["count_bolt"]["executed"] == components["count_bolt"]["acked"] == emitted
    assert json.loads(stats.read_text())["name"] == "wordcount"


def test_sparse_habits_pick_the_topology_environment_and_options(tmp_path):
    project = PROJECTS / "batchcount"
    stats = tmp_path / "stats.json"
    # no target: topology_specs' only file; -e picks par and options; -o overrides them
    args = ["--engine", "local", "-e", "prod", "-o", "batchcount.sentences=40"]
    done = sparkstorm(project, *args, "--until-idle", "--stats-json", str(stats), "--no-ui")
    assert done.returncode == 1, done.stderr  # sentence 0 raises once, on purpose
    assert "RuntimeError: the first sight of sentence 0 fails" in done.stderr
    assert 'batchers/bolts.py", line' in done.stderr  # the user's file and line
    components = json.loads(stats.read_text())["components"]
    assert components["sentence_spout"]["acked"] == 40
    assert components["batch_bolt"]["tasks"] == 3  # par {"dev": 2, "prod": 3}

    several = sparkstorm(project, "--engine", "local", "-t", "1")
    assert several.returncode == 2
    assert "has several environments (dev, prod): name one with --environment" in several.stderr


def test_jvm_components_and_missing_pieces_get_one_line_naming_them(tmp_path):
    (tmp_path / "topologies").mkdir()
    (tmp_path / "topologies" / "mixed.py").write_text(
        textwrap.dedent(
            """
            from streamparse import Bolt, JavaSpout, Topology

            class Count(Bolt):
                outputs = ["n"]
                def process(self, tup):
                    pass

            class Mixed(Topology):
                kafka = JavaSpout.spec(
                    full_class_name="org.apache.storm.kafka.spout.KafkaSpout",
                    args_list=[],
                    outputs=["message"],
                )
                count = Count.spec(inputs=[kafka])
            """
        )
    )
    done = sparkstorm(tmp_path, "topologies/mixed.py", "--engine", "local", "-t", "1")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "sparkstorm: error: component 'kafka' is a JavaSpout "
        "(org.apache.storm.kafka.spout.KafkaSpout): sparkstorm runs Python components only, "
        "in its own workers, with no JVM Storm to run it in; write it as a Python Spout or "
        "Bolt (streamparse.Spout / streamparse.Bolt)"
    ]
    (tmp_path / "topologies" / "mixed.py").write_text(
        textwrap.dedent(
            """
            from streamparse import BatchingBolt, Spout, Topology

            class Words(Spout):
                outputs = ["word"]
                def next_tuple(self):
                    pass

            class Batches(BatchingBolt):
                def process_batch(self, key, tups):
                    pass

            class NoTicks(Topology):
                words = Words.spec()
                batches = Batches.spec(inputs=[words])
            """
        )
    )
    done = sparkstorm(tmp_path, "topologies/mixed.py", "--engine", "local", "-t", "1")
    assert done.returncode == 2
    assert "Batches 'batches' gets no tick tuples, so its batches would never" in done.stderr
    ticks = ["-o", "topology.tick.tuple.freq.secs=1"]
    done = sparkstorm(tmp_path, "topologies/mixed.py", "--engine", "local", "-t", "1", *ticks)
    assert done.returncode == 0, done.stderr
    (tmp_path / "topologies" / "mixed.py").write_text("from streamparse.cli import main\n")
    done = sparkstorm(tmp_path, "topologies/mixed.py", "--engine", "local", "-t", "1")
    assert done.returncode == 2
    assert "mixed.py:1: ModuleNotFoundError: No module named 'streamparse.cli'" in done.stderr
    done = sparkstorm(tmp_path, "--engine", "local")
    assert done.returncode == 2
    assert "only in a streamparse project (a folder with config.json)" in done.stderr
