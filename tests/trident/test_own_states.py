"""A Storm user's own state, with default settings: exact through a SIGKILL (issue 55, 1).

Storm's Trident API lets a user write a ``StateFactory`` over any store; such a factory
cannot say where it keeps its values, and sparkstorm refused it unless
``topology.state.provider`` was set. Storm keeps the coordinator's progress in
ZooKeeper, always there; here the driver keeps it on its disk, said at start.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections import Counter

import pytest
import redis

from sparkstorm import Fields
from sparkstorm.trident import BaseFunction, Count, TridentTopology
from tests.run_process import ROOT, RunProcess
from tests.trident.own_state_topology import FileCounts, counts
from tests.trident.proof_topology import REDIS
from tests.trident.test_sigkill_proof import SENTENCES, fill

pytestmark = pytest.mark.services
TARGET = str(ROOT / "tests/trident/own_state_topology.py") + ":topology"


@pytest.mark.parametrize(
    ("engine", "kind"),
    [("local", "transactional"), ("local", "opaque"), ("continuous", "transactional")],
)
def test_a_users_own_state_with_default_settings_is_exact_through_a_sigkill(engine, kind, tmp_path):
    name = f"own_{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(REDIS)
    sentences = SENTENCES[:6000]
    fill(client, name, sentences)
    folder = tmp_path / "state"
    folder.mkdir()
    env = {
        "OWN_NAME": name,
        "OWN_DIR": str(folder),
        "OWN_KIND": kind,
        "SPARKSTORM_HOME": str(tmp_path / "home"),
    }
    try:
        run = RunProcess(TARGET, engine, tmp_path, "--name", name, env=env)
        run.until(lambda: sum(counts(str(folder)).values()) >= 1500, "1,500 words counted", 180)
        run.kill()
        assert "Trident progress: driver at " in run.output()
        assert (tmp_path / "home" / "trident" / f"{name}.json").exists()
        counted = sum(counts(str(folder)).values())
        assert counted < 3 * len(sentences), "the kill came after the end of the stream"
        final = RunProcess(TARGET, engine, tmp_path, "--name", name, "--until-idle", env=env)
        assert final.wait(300) == 0, final.output()[-3000:]
        expected = Counter(word for sentence in sentences for word in sentence.split())
        assert counts(str(folder)) == expected
    finally:
        client.delete(name, *client.keys(f"{name}:*"), *client.keys(f"sparkstorm:trident:{name}*"))


def test_two_local_clusters_never_share_progress_nor_write_into_the_home(tmp_path, monkeypatch):
    """Issue 66, defect 1: a LocalCluster kept a user's own state's progress in
    ~/.sparkstorm/trident/NAME.json, and the next cluster's coordinator started at the
    txid after it while the test's feeder waited for batch 1: it timed out."""
    from sparkstorm.testing import LocalCluster
    from sparkstorm.trident import FeederBatchSpout

    monkeypatch.setenv("SPARKSTORM_HOME", str(tmp_path / "home"))
    for round_ in range(2):  # the same topology name, a fresh state folder each time
        folder = tmp_path / f"state-{round_}"
        folder.mkdir()
        with LocalCluster() as cluster:
            feeder = FeederBatchSpout(["word"])
            trident = TridentTopology()
            trident.new_stream("words", feeder).group_by(Fields("word")).persistent_aggregate(
                FileCounts(str(folder), "transactional"), Count(), Fields("count")
            )
            cluster.submit_topology("go-back-n", {}, trident.build())
            feeder.feed([["a"], ["b"], ["a"]])
            feeder.feed([["a"]])
            cluster.wait_until_idle()
            assert counts(str(folder)) == {"a": 3, "b": 1}, f"cluster {round_ + 1}"
    assert not (tmp_path / "home" / "trident").exists()  # nothing left in the home


def test_a_local_cluster_given_a_home_keeps_progress_there(tmp_path):
    from sparkstorm.testing import LocalCluster
    from sparkstorm.trident import FeederBatchSpout

    with LocalCluster(home=tmp_path / "kept") as cluster:
        feeder = FeederBatchSpout(["word"])
        trident = TridentTopology()
        trident.new_stream("words", feeder).group_by(Fields("word")).persistent_aggregate(
            FileCounts(str(tmp_path), "transactional"), Count(), Fields("count")
        )
        cluster.submit_topology("kept-progress", {}, trident.build())
        feeder.feed([["a"]])
        cluster.wait_until_idle()
    assert (tmp_path / "kept" / "trident" / "kept-progress.json").exists()


def test_txids_only_go_forward_when_the_coordinator_starts_again():
    """Issue 66, defect 3: the progress was kept for batches with tuples only, so a
    coordinator started again (a rebalance, a lost worker, a topology submitted again)
    went over the empty batches' txids once more, and the txid stood still meanwhile."""
    from sparkstorm.testing import LocalCluster
    from sparkstorm.trident import FeederBatchSpout, MemoryMapState

    def txid(cluster: LocalCluster) -> int:
        return cluster.stats("forward")["trident-coordinator"]["metrics"]["trident"]["txid"]

    with LocalCluster(simulated_time=False) as cluster:
        seen = []
        for wait in (2.5, 1.2):  # the run's memory keeps the progress across a kill
            feeder = FeederBatchSpout(["word"])
            trident = TridentTopology()
            trident.new_stream("words", feeder).group_by(Fields("word")).persistent_aggregate(
                MemoryMapState.Factory(), Count(), Fields("count")
            )
            cluster.submit_topology("forward", {}, trident.build())
            feeder.feed([["a"]])
            cluster.advance_time(wait)  # empty batches, 50 ms apart; figures every second
            seen.append(txid(cluster))
            cluster.kill_topology("forward")
        assert seen[1] > seen[0], f"the txid went back from {seen[0]} to {seen[1]}"


def _counts_topology(folder, spout, stream="words", fixed=False):
    folder.mkdir(exist_ok=True)
    trident = TridentTopology()
    words = trident.new_stream(stream, spout)
    if fixed:  # a new version of the topology: a function changed, spouts and states not
        words = words.each(Fields("word"), _Lower(), Fields("lower")).project(Fields("lower"))
        words = words.group_by(Fields("lower"))
    else:
        words = words.group_by(Fields("word"))
    words.persistent_aggregate(FileCounts(str(folder), "transactional"), Count(), Fields("count"))
    return trident.build()


class _Lower(BaseFunction):
    def execute(self, tup, collector):
        collector.emit([tup.get_string(0).lower()])


def test_another_topology_under_the_same_name_is_refused_and_a_new_version_resumes(tmp_path):
    """Issue 66, defect 2: the driver's progress was keyed by the topology's name alone,
    so another project's ``counts`` resumed this one's txid and spouts' metadata."""
    from sparkstorm.errors import InvalidTopologyError
    from sparkstorm.testing import LocalCluster
    from sparkstorm.trident import FeederBatchSpout

    home = tmp_path / "home"
    with LocalCluster(home=home) as cluster:
        feeder = FeederBatchSpout(["word"])
        cluster.submit_topology("counts", {}, _counts_topology(tmp_path / "a", feeder))
        feeder.feed([["a"], ["b"]])
        cluster.wait_until_idle()
        cluster.kill_topology("counts")
        other = FeederBatchSpout(["word"])  # another project: its spout is named otherwise
        with pytest.raises(InvalidTopologyError, match="another topology's under the same name"):
            cluster.submit_topology("counts", {}, _counts_topology(tmp_path / "b", other, "lines"))
        fixed = FeederBatchSpout(["word"])  # the same topology, a function fixed: it resumes
        cluster.submit_topology("counts", {}, _counts_topology(tmp_path / "a", fixed, fixed=True))
        fixed.feed([["A"]])
        cluster.wait_until_idle()
        cluster.kill_topology("counts")
    assert counts(str(tmp_path / "a")) == {"a": 2, "b": 1}  # txid went on: nothing redone
    env = {**os.environ, "SPARKSTORM_HOME": str(home)}
    reset = subprocess.run(
        [sys.executable, "-m", "sparkstorm.cli", "state", "counts", "--reset"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert reset.returncode == 0 and "its next run starts at txid 1" in reset.stdout, reset
    with LocalCluster(home=home) as cluster:  # reset: the other project may take the name
        other = FeederBatchSpout(["word"])
        cluster.submit_topology("counts", {}, _counts_topology(tmp_path / "b", other, "lines"))
        other.feed([["z"]])
        cluster.wait_until_idle()
    assert counts(str(tmp_path / "b")) == {"z": 1}
