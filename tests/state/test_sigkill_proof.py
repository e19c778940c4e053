"""The proof of exactly-once state: SIGKILL the driver at random points, restart, compare.

``RabbitMQ -> split -> stateful count (Redis) -> PostgreSQL`` (``proof_topology.py``),
fed a known set of sentences. Each run's whole process group (the driver, and on Spark
its JVM and Python workers) is SIGKILLed at a random moment after a checkpoint, several
times, and the topology restarted under the same name; a last run goes until idle (on
the continuous mode, one of its Spark Python workers is SIGKILLed on the way). The
committed counts in Redis, and the counts in PostgreSQL, must then equal the exact
counts: a message counted twice or not at all shows.
"""

from __future__ import annotations

import os
import random
import signal
import time

import pytest

from sparkstorm.state.stores import open_store
from tests.run_process import ROOT, RunProcess, spark_python_workers
from tests.state.proof_topology import REDIS, committed_counts, table_counts
from tests.state.topology import expected_counts, sentences

pytestmark = pytest.mark.services
KILLS = 3
CYCLE_SECS = 1.5
SENTENCES = 2000
GRACE = "sparkstorm.idle.grace.secs=3"
"""The last run's grace: as a user's who wants no early end, while workers start again."""
TARGET = str(ROOT / "tests/state/proof_topology.py") + ":topology"


@pytest.mark.parametrize(
    ("engine", "columns", "kills", "queue_and_table"),
    # a checkpoint cycle (drain, prepare, commit) is ~0.3 s locally and in the continuous
    # mode; each start of a run on Spark costs 10-15 s of start-up, so one kill there. The
    # superstep mode runs the local engine's control plane (the driver killed is the same
    # code); its own kill points, a superstep lost as it commits and executors killed,
    # are in test_exactly_once.py and tests/spark/test_cluster.py (38 s saved for the
    # suite's 20 minutes). On the continuous mode, a Spark Python worker is SIGKILLed too,
    # in the run after the driver's kill. ``columns``: the count is a StatefulArrowBolt.
    # From a Redis stream, a spout that holds the entries it read ahead: once, on the
    # continuous mode, no checkpoint ever committed with it (the drain waited for them);
    # two worker kills, no driver kill (the other cases kill the same control plane).
    [
        ("local", False, KILLS, "rabbitmq"),
        ("local", True, 1, "rabbitmq"),
        ("continuous", False, 1, "rabbitmq"),
        ("continuous", True, 1, "rabbitmq"),
        ("continuous", False, 0, "redis"),
    ],
    ids=[
        "local-tuples",
        "local-columns",
        "continuous-tuples",
        "continuous-columns",
        "continuous-redis",
    ],
    indirect=["queue_and_table"],
)
def test_sigkill_at_random_points_counts_every_word_exactly_once(
    engine, columns, kills, queue_and_table, redis_prefix, tmp_path
):
    seed = random.randrange(1 << 32)
    print(f"seed {seed}")  # shown on failure: the kill points can be replayed
    rng = random.Random(seed)
    name = queue_and_table.name
    items = sentences(SENTENCES)
    queue_and_table.publish([f"{i}|{text}".encode() for i, text in items])  # message_id m<i>
    env = {
        "PROOF_NAME": name,
        "PROOF_SOURCE": queue_and_table.kind,
        "PROOF_REDIS_PREFIX": redis_prefix,
        "PROOF_PENDING": "100",
    }
    if columns:
        env["PROOF_COLUMNS"] = "1"
    store = open_store("redis", {"url": REDIS, "key_prefix": redis_prefix}, name)
    began = time.monotonic()

    def next_checkpoint(run: RunProcess) -> None:
        committed = store.committed_txid()
        run.until(lambda: store.committed_txid() > committed, "a new checkpoint", 180)
        time.sleep(rng.uniform(0, CYCLE_SECS))  # somewhere in the checkpoint cycle

    def said(what: str) -> None:
        left = queue_and_table.remaining()
        print(
            f"{what} at {time.monotonic() - began:.0f}s: checkpoint "
            f"{store.committed_txid()}, {left} messages left"
        )
        assert left > 0, f"the {what} came after the end of the stream: publish more"

    for kill in range(kills):
        run = RunProcess(TARGET, engine, tmp_path, "--name", name, env=env)
        next_checkpoint(run)
        run.kill()
        said(f"driver kill {kill + 1}")
    final = RunProcess(
        TARGET, engine, tmp_path, "--name", name, "--until-idle", "--conf", GRACE, env=env
    )
    # a worker lost mid-run: its tasks start again elsewhere; from Redis, twice (the run
    # must not end as idle while the new workers start, with entries still to read)
    for kill in range((engine == "continuous") + (queue_and_table.kind == "redis")):
        next_checkpoint(final)
        workers = spark_python_workers(final.process.pid)
        assert workers, "no Spark Python worker to kill"
        os.kill(rng.choice(workers), signal.SIGKILL)
        said(f"worker kill {kill + 1}")
    assert final.wait(300) == 0, final.output()[-3000:]
    print(f"the last run ended at {time.monotonic() - began:.0f}s")
    if engine == "continuous":
        assert "a continuous worker was lost" in final.output(), final.output()[-3000:]
    assert queue_and_table.remaining() == 0, final.output()[-3000:]
    exact = expected_counts(items)
    assert committed_counts(env, name) == exact
    assert table_counts(name) == exact
