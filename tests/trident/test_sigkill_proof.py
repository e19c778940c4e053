"""Trident's exactly-once under SIGKILL: kill the run at random points, restart, compare.

A Redis stream -> split -> Count into a map (``proof_topology.py``), three batches in
flight. Each run's whole process group (the driver, and in the continuous mode Spark's
JVM and Python workers with the coordinator in one of them) is SIGKILLed at a random
moment after a commit, and the topology started again under the same name; a last run
goes until idle. The map's counts, read from outside in their documented layout, must
then be exact: a batch counted twice or lost shows. The kill lands anywhere in the
batch cycle: between a batch's ranges being kept and its emit, between a state's write
and the coordinator's progress, in a commit half written over the state's partitions.
"""

from __future__ import annotations

import random
import time
import uuid
from collections import Counter

import psycopg
import pytest
import redis

from sparkstorm.state.stores import open_store
from tests.run_process import ROOT, RunProcess
from tests.trident.proof_topology import DSN, REDIS
from tests.trident.test_map_states import stored_counts

pytestmark = pytest.mark.services
TARGET = str(ROOT / "tests/trident/proof_topology.py") + ":topology"
SENTENCES = [f"w{i % 13} w{i % 7} common" for i in range(24_000)]


@pytest.fixture
def name():
    name = f"proof_{uuid.uuid4().hex[:8]}"
    yield name
    client = redis.Redis.from_url(REDIS)
    client.delete(name, f"sparkstorm:trident:{name}", *client.keys(f"{name}:*"))
    with psycopg.connect(DSN, autocommit=True) as connection:
        connection.execute(f"DROP TABLE IF EXISTS sparkstorm_trident_{name}")


@pytest.mark.parametrize(
    ("engine", "kind", "kills"),
    # the continuous mode's start costs 10-15 s of Spark start-up a run: one kill there
    [("local", "transactional", 3), ("local", "opaque", 3), ("continuous", "transactional", 1)],
)
def test_sigkill_at_random_points_of_the_batch_cycle_counts_exactly_once(
    engine, kind, kills, name, tmp_path
):
    seed = random.randrange(1 << 32)
    print(f"seed {seed}")  # shown on failure: the kill points can be replayed
    rng = random.Random(seed)
    client = redis.Redis.from_url(REDIS)
    pipe = client.pipeline()
    for sentence in SENTENCES:
        pipe.xadd(name, {"sentence": sentence})
    pipe.execute()
    progress = open_store("redis", {"url": REDIS, "key_prefix": name}, f"{name}:trident")
    env = {"PROOF_NAME": name, "PROOF_KIND": kind}
    total = 3 * len(SENTENCES)
    for kill in range(kills):
        run = RunProcess(TARGET, engine, tmp_path, "--name", name, env=env)
        committed = progress.committed_txid()
        run.until(lambda c=committed: progress.committed_txid() > c + 1, "new commits", 180)
        time.sleep(rng.uniform(0, 0.2))  # somewhere in the batch cycle
        run.kill()
        counted = sum(stored_counts(name, kind, store(kind)).values())
        print(f"kill {kill + 1}: txid {progress.committed_txid()}, {counted} of {total} words")
        assert counted < total, "the kill came after the end of the stream: add entries"
    final = RunProcess(TARGET, engine, tmp_path, "--name", name, "--until-idle", env=env)
    assert final.wait(300) == 0, final.output()[-3000:]
    expected = Counter(word for sentence in SENTENCES for word in sentence.split())
    assert stored_counts(name, kind, store(kind)) == expected


def store(kind: str) -> str:
    return "redis" if kind == "transactional" else "postgres"
