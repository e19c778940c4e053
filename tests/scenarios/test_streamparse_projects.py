"""streamparse projects run unchanged, on every engine and mode.

streamparse's own quickstart project (rendered from the installed streamparse package as
``sparse quickstart wordcount`` renders it) and a project of ours with a ReliableSpout,
a BatchingBolt on ticks and per-environment settings, both loaded as ``sparkstorm run``
loads them: their modules import ``streamparse`` and are found in the project's ``src/``,
on the driver and in the Spark workers.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import shutil
from collections import Counter
from pathlib import Path

import jinja2
import pytest

from sparkstorm.cli import resolve_target
from sparkstorm.config import SPARKSTORM_CAPTURE
from sparkstorm.streamparse import install_import_hook
from sparkstorm.testing import MockedSources, complete_topology
from tests.conftest import run_on
from tests.scenarios.test_testing_toolkit import on

PROJECTS = Path(__file__).resolve().parents[1] / "streamparse" / "projects"


def render_quickstart(dest: Path) -> Path:
    """streamparse's quickstart project in ``dest``, as ``sparse quickstart`` writes it.

    The templates come from the installed streamparse package (``sparse`` itself needs
    ``pkg_resources``, which setuptools no longer has).
    """
    template = Path(
        str(importlib.metadata.distribution("streamparse").locate_file("streamparse"))
    ) / ("bootstrap/project")
    shutil.copytree(
        template, dest, ignore=shutil.ignore_patterns("*.jinja2.*", "gitignore", "__pycache__")
    )
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template)), autoescape=False)
    env.globals["project_name"] = dest.name
    for name, out in (("config.jinja2.json", "config.json"), ("project.jinja2.clj", "project.clj")):
        (dest / out).write_text(env.get_template(name).render())
    return dest


@pytest.fixture(scope="session")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One rendering for the session: Spark's workers keep the modules they imported."""
    return render_quickstart(tmp_path_factory.mktemp("streamparse") / "wordcount")


def load(project: Path, topology: str, environment: str | None = None):
    """As ``sparkstorm run topologies/NAME.py`` loads it in the project folder."""
    install_import_hook()
    return resolve_target(str(project / "topologies" / f"{topology}.py"), environment)


def test_the_streamparse_quickstart_counts_exactly(engine, spark, quickstart):
    topology, conf, _ = load(quickstart, "wordcount")
    words = ["dog", "cat", "zebra", "dog", "elephant", "cat", "dog"]
    mocked = MockedSources().add_mock_data("word_spout", *[[w] for w in words])
    results = complete_topology(topology, mocked, conf, **on(engine, spark))
    final: Counter[str] = Counter()
    for word, count in results.read_tuples("count_bolt"):
        final[word] = max(final[word], count)
    assert final == {"dog": 30, "cat": 2, "zebra": 1, "elephant": 1}  # dog counts 10 each
    assert results.result.stats["word_spout"]["acked"] == len(words)
    assert results.result.stats["count_bolt"]["executed"] == len(words)


def test_the_streamparse_quickstart_runs_as_it_is_and_every_word_is_counted(
    engine, spark, quickstart
):
    topology, conf, _ = load(quickstart, "wordcount")
    result = run_on(engine, topology, conf, spark, duration=3)
    emitted = result.stats["word_spout"]["emitted"]  # unanchored: no trees to ack
    assert emitted > 0 and result.errors == []
    assert result.stats["count_bolt"]["executed"] == emitted  # the stop drained them all
    assert result.stats["count_bolt"]["acked"] == emitted


def test_a_batching_bolt_project_acks_every_sentence_and_counts_exactly(engine, spark):
    topology, conf, _ = load(PROJECTS / "batchcount", "batchcount", "dev")
    assert topology.components["batch_bolt"].num_tasks == 2  # par {"dev": 2, "prod": 3}
    assert conf["batchcount.sentences"] == 300 and conf["topology.tick.tuple.freq.secs"] == 1
    conf[SPARKSTORM_CAPTURE] = ["total_bolt"]
    result = run_on(engine, topology, conf, spark, until_idle=True, duration=120)
    spout = result.stats["sentence_spout"]
    assert spout["acked"] == 300
    assert 1 <= spout["failed"] <= 2  # sentence 0 raised once in each split task it met
    assert {e.component for e in result.errors} == {"split_bolt"}
    sentence = importlib.import_module("batchers.spouts").sentence
    expected = Counter(w for i in range(300) for w in sentence(i).split())
    totals: Counter[str] = Counter()
    for word, total in result.captured[("total_bolt", "default")]:
        totals[word] = max(totals[word], total)
    assert totals == expected
