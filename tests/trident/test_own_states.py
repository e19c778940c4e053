"""A Storm user's own state, with default settings: exact through a SIGKILL (issue 55, 1).

Storm's Trident API lets a user write a ``StateFactory`` over any store; such a factory
cannot say where it keeps its values, and sparkstorm refused it unless
``topology.state.provider`` was set. Storm keeps the coordinator's progress in
ZooKeeper, always there; here the driver keeps it on its disk, said at start.
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
import redis

from tests.run_process import ROOT, RunProcess
from tests.trident.own_state_topology import counts
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
