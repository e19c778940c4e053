"""Trident's exactly-once under faults: SIGKILL of the run, of a worker, a store restart.

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

import json
import os
import random
import signal
import time
import uuid
from collections import Counter

import psycopg
import pytest
import redis

from sparkstorm.state.stores import open_store
from tests.run_process import ROOT, RunProcess, spark_python_workers
from tests.state.test_store_restart import RedisServer, free_port
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
    client.delete(name, *client.keys(f"sparkstorm:trident:{name}*"), *client.keys(f"{name}:*"))
    with psycopg.connect(DSN, autocommit=True) as connection:
        connection.execute(f"DROP TABLE IF EXISTS sparkstorm_trident_{name}")
        connection.execute(f"DROP TABLE IF EXISTS sparkstorm_trident_{name}_windows")


@pytest.mark.parametrize(
    ("engine", "kind", "kills"),
    # the coordinator and the states are the same code on every engine; the continuous
    # mode's own case, its workers dying under the coordinator, is the worker kill below
    # (a kill of its whole run was checked by hand: it costs 10-15 s of start-up a run)
    [("local", "transactional", 3), ("local", "opaque", 3)],
)
def test_sigkill_at_random_points_of_the_batch_cycle_counts_exactly_once(
    engine, kind, kills, name, tmp_path
):
    seed = random.randrange(1 << 32)
    print(f"seed {seed}")  # shown on failure: the kill points can be replayed
    rng = random.Random(seed)
    fill(redis.Redis.from_url(REDIS), name)
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
    assert windowed(name, kind) == expected.total()  # every window counted once


def fill(client: redis.Redis, stream: str, sentences: list[str] = SENTENCES) -> None:
    """The sentences, into ``stream``."""
    pipe = client.pipeline()
    for sentence in sentences:
        pipe.xadd(stream, {"sentence": sentence})
    pipe.execute()


def test_a_restart_with_default_settings_counts_nothing_twice(name, tmp_path):
    """No ``topology.state.provider``: the progress is kept in the map's own Redis, so a run
    SIGKILLed mid-stream and run again to idle ends exact (it went on from the last commit;
    with its progress in memory it began again at txid 1 and counted it all again)."""
    sentences = SENTENCES[:8000]
    fill(redis.Redis.from_url(REDIS), name, sentences)
    env = {"PROOF_NAME": name, "PROOF_KIND": "transactional", "PROOF_DEFAULTS": "1"}
    run = RunProcess(TARGET, "local", tmp_path, "--name", name, env=env)

    def counted() -> int:
        return sum(stored_counts(name, "transactional").values())

    run.until(lambda: counted() >= 2800, "2,800 words counted")
    run.kill()
    assert counted() < 3 * len(sentences), "the kill came after the end of the stream"
    final = RunProcess(TARGET, "local", tmp_path, "--name", name, "--until-idle", env=env)
    assert final.wait(300) == 0, final.output()[-3000:]
    expected = Counter(word for sentence in sentences for word in sentence.split())
    assert stored_counts(name, "transactional") == expected
    assert windowed(name, "transactional") == expected.total()


def store(kind: str) -> str:
    return "redis" if kind == "transactional" else "postgres"


def windowed(name: str, kind: str) -> int:
    """The words the proof's tumbling windows counted, summed (read from outside)."""
    totals = stored_counts(f"{name}_windows", kind, store(kind))
    assert len(totals) == 1, totals  # the global aggregate's one key
    return next(iter(totals.values()))


def test_the_store_restarted_mid_run_loses_nothing_and_counts_nothing_twice(tmp_path):
    """A Redis of the test's own holds the stream, the map and the progress; it is stopped
    for two seconds mid-run: the calls wait for it (the stores' retry), the batches go on
    after it, and the counts are exact."""
    server = RedisServer(free_port(), tmp_path)
    server.start()
    url = f"redis://127.0.0.1:{server.port}/0"
    try:
        client = redis.Redis.from_url(url)
        fill(client, "restarted")
        env = {"PROOF_NAME": "restarted", "PROOF_KIND": "transactional", "PROOF_REDIS": url}
        run = RunProcess(TARGET, "local", tmp_path, "--name", "restarted", "--until-idle", env=env)
        progress = open_store("redis", {"url": url, "key_prefix": "restarted"}, "restarted:trident")
        run.until(lambda: progress.committed_txid() > 5, "commits")

        def counts() -> Counter[str]:
            raw = client.hgetall("sparkstorm:trident:restarted")
            return Counter({json.loads(k)[0]: json.loads(v)["val"] for k, v in raw.items()})

        server.stop()
        time.sleep(2)
        server.start()
        at_restart = sum(counts().values())  # about what was committed before the stop
        assert run.wait(300) == 0, run.output()[-3000:]
        expected = Counter(word for sentence in SENTENCES for word in sentence.split())
        assert at_restart < expected.total(), "the stop came after the end: add entries"
        assert counts() == expected
    finally:
        server.stop()


def test_a_spark_python_worker_killed_mid_run_loses_nothing(name, tmp_path):
    """The continuous mode: the worker of the coordinator or of a state dies; the run
    goes on in new workers from the kept txid and ranges, and ends idle."""
    fill(redis.Redis.from_url(REDIS), name)
    progress = open_store("redis", {"url": REDIS, "key_prefix": name}, f"{name}:trident")
    env = {"PROOF_NAME": name, "PROOF_KIND": "transactional", "PROOF_WINDOWS": "memory"}
    run = RunProcess(TARGET, "continuous", tmp_path, "--name", name, "--until-idle", env=env)
    run.until(lambda: progress.committed_txid() > 5, "commits", 180)
    workers = spark_python_workers(run.process.pid)
    assert workers, "no Spark Python worker to kill"
    os.kill(random.choice(workers), signal.SIGKILL)
    assert run.wait(300) == 0, run.output()[-3000:]
    assert "lost" in run.output(), run.output()[-3000:]  # the loss was seen, and recovered
    expected = Counter(word for sentence in SENTENCES for word in sentence.split())
    assert stored_counts(name, "transactional") == expected
    assert windowed(name, "transactional") == expected.total()
