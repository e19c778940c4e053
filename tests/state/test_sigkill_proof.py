"""The proof of exactly-once state: SIGKILL the driver at random points, restart, compare.

``RabbitMQ -> split -> stateful count (Redis) -> PostgreSQL`` (``proof_topology.py``),
fed a known set of sentences. Each run's whole process group (the driver, and on Spark
its JVM and Python workers) is SIGKILLed at a random moment after a checkpoint, several
times, and the topology restarted under the same name; a last run goes until idle. The
committed counts in Redis, and the counts in PostgreSQL, must then equal the exact
counts: a message counted twice or not at all shows.
"""

from __future__ import annotations

import random
import time

import pytest

from sparkstorm.state.stores import open_store
from tests.run_process import ROOT, RunProcess
from tests.state.proof_topology import REDIS, committed_counts, table_counts
from tests.state.topology import expected_counts, sentences

pytestmark = pytest.mark.services
KILLS = 3
SENTENCES = 2000
TARGET = str(ROOT / "tests/state/proof_topology.py") + ":topology"


@pytest.mark.parametrize(
    ("engine", "pending", "cycle_secs", "kills"),
    # a checkpoint cycle (drain, prepare, commit) is ~0.3 s locally and in the continuous
    # mode; each start of a run on Spark costs 10-15 s of start-up, so one kill there. The
    # superstep mode runs the local engine's control plane (the driver killed is the same
    # code); its own kill points, a superstep lost as it commits and executors killed,
    # are in test_exactly_once.py and tests/spark/test_cluster.py (38 s saved for the
    # suite's 20 minutes). The continuous mode's own: its workers, in tests/continuous.
    [("local", 100, 1.5, KILLS), ("continuous", 100, 1.5, 1)],
)
def test_sigkill_at_random_points_counts_every_word_exactly_once(
    engine, pending, cycle_secs, kills, queue_and_table, redis_prefix, tmp_path
):
    seed = random.randrange(1 << 32)
    print(f"seed {seed}")  # shown on failure: the kill points can be replayed
    rng = random.Random(seed)
    name = queue_and_table.name
    items = sentences(SENTENCES)
    queue_and_table.publish([f"{i}|{text}".encode() for i, text in items])  # message_id m<i>
    env = {"PROOF_NAME": name, "PROOF_REDIS_PREFIX": redis_prefix, "PROOF_PENDING": str(pending)}
    store = open_store("redis", {"url": REDIS, "key_prefix": redis_prefix}, name)
    began = time.monotonic()
    for kill in range(kills):
        run = RunProcess(TARGET, engine, tmp_path, "--name", name, env=env)
        committed = store.committed_txid()
        run.until(lambda c=committed: store.committed_txid() > c, "a new checkpoint", 180)
        time.sleep(rng.uniform(0, cycle_secs))  # somewhere in the checkpoint cycle
        run.kill()
        left = queue_and_table.remaining()
        print(
            f"kill {kill + 1} at {time.monotonic() - began:.0f}s: checkpoint "
            f"{store.committed_txid()}, {left} messages left"
        )
        assert left > 0, "the kill came after the end of the stream: publish more"
    final = RunProcess(TARGET, engine, tmp_path, "--name", name, "--until-idle", env=env)
    assert final.wait(300) == 0, final.output()[-3000:]
    print(f"the last run ended at {time.monotonic() - began:.0f}s")
    assert queue_and_table.remaining() == 0
    exact = expected_counts(items)
    assert committed_counts(env, name) == exact
    assert table_counts(name) == exact
