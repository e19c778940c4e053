"""A user's own test file and package reach Spark's workers with nothing set up.

The user's pytest run, as they would start it: a project whose ``tests/`` folder holds
their test file and a helper package beside it, ``python -m pytest tests/test_mine.py``
from the project's root, no PYTHONPATH, and ``LocalCluster(engine="spark")`` in both
modes. pytest puts ``tests/`` on the driver's path; the Spark workers, started in the
project's root, cannot import either module: the engines ship them by value.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

PACKAGE = """
from sparkstorm import Bolt, Fields


def shout(word):
    return word.upper() + "!"


class Shout(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit([shout(tup[0])], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))
"""

TEST_FILE = """
import pytest

from mylib import Shout
from sparkstorm import Bolt, Config, Fields, TopologyBuilder
from sparkstorm.testing import FeederSpout, LocalCluster


class Tail(Bolt):  # defined in the test file itself
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit([tup[0][-2:]], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("tail"))


@pytest.mark.parametrize("mode", ["superstep", "continuous"])
def test_my_topology_on_spark(mode):
    feeder = FeederSpout(Fields("word"))
    builder = TopologyBuilder()
    builder.set_spout("words", feeder)
    builder.set_bolt("shout", Shout(), 2).shuffle_grouping("words")
    builder.set_bolt("tail", Tail(), 2).shuffle_grouping("shout")
    with LocalCluster(engine="spark", master="local[2]", mode=mode) as cluster:
        cluster.submit_topology("mine", Config(), builder.create_topology(), capture=True)
        for i, word in enumerate(["cow", "moon"]):
            feeder.feed([word], i)
        cluster.wait_until_idle()
        assert sorted(feeder.acked) == [0, 1]
        assert sorted(cluster.captured("mine", "tail")) == [["N!"], ["W!"]]
"""


def test_a_users_test_file_and_package_run_on_spark_without_pythonpath(tmp_path):
    tests = tmp_path / "tests"
    (tests / "mylib").mkdir(parents=True)
    (tests / "mylib" / "__init__.py").write_text(textwrap.dedent(PACKAGE))
    (tests / "test_mine.py").write_text(textwrap.dedent(TEST_FILE))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYSPARK_PYTHON"] = sys.executable
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_mine.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout
