"""A Trident topology's committed maps read from outside: ``sparkstorm state --from``,
``read_trident_state`` and ``trident_state_frame``."""

from __future__ import annotations

import json
import uuid
from collections import Counter

import psycopg
import pytest
import redis

from sparkstorm import run
from sparkstorm.trident import read_trident_state, trident_state_frame
from tests.test_cli import sparkstorm
from tests.trident.proof_topology import DSN, REDIS, topology

pytestmark = pytest.mark.services
SENTENCES = [f"w{i % 5} common" for i in range(120)]
EXPECTED = Counter(w for s in SENTENCES for w in s.split())


@pytest.fixture(params=["transactional", "opaque"])  # Redis, PostgreSQL
def counted(request, monkeypatch):
    """The proof's word count run to the end over a stream of its own; its name and kind."""
    name, kind = f"read_{uuid.uuid4().hex[:8]}", request.param
    client = redis.Redis.from_url(REDIS)
    for sentence in SENTENCES:
        client.xadd(name, {"sentence": sentence})
    monkeypatch.setenv("PROOF_NAME", name)
    monkeypatch.setenv("PROOF_KIND", kind)
    built, conf = topology()
    result = run(built, conf, "local", name=name, until_idle=True)
    assert result.stats["trident-coordinator"]["failed"] == 0
    yield name, kind, conf
    client.delete(name, *client.keys(f"sparkstorm:trident:{name}*"), *client.keys(f"{name}:*"))
    with psycopg.connect(DSN, autocommit=True) as connection:
        connection.execute(f"DROP TABLE IF EXISTS sparkstorm_trident_{name}")
        connection.execute(f"DROP TABLE IF EXISTS sparkstorm_trident_{name}_windows")


def test_the_committed_maps_read_from_outside(counted, spark):
    name, kind, conf = counted
    built, _ = topology()
    state = read_trident_state(built, conf, name)
    assert state.txid >= 3  # 120 entries in batches of 50
    assert state.of("counts") == {(word,): n for word, n in EXPECTED.items()}
    assert [m.name for m in state.maps] == ["counts", "windows"]
    counts = state.maps[0]
    where = "RedisMapState transactional at redis://" if kind == "transactional" else "Postgres"
    assert counts.where.startswith(where)

    target = "tests/trident/proof_topology.py:topology"  # PROOF_NAME and _KIND: the fixture's
    shown = sparkstorm("state", name, "--from", target, "--json")
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    counts_rows = [row for row in rows if row["state"] == "counts"]
    assert {row["key"][0]: row["value"] for row in counts_rows} == EXPECTED
    assert [row["value"] for row in rows if row["state"] == "windows"] == [200]  # 2 windows
    listed = sparkstorm("state", name, "--from", target, "--limit", "2")
    assert f"{name}: Trident batch {state.txid} committed last" in listed.stdout
    assert "counts (" in listed.stdout and "6 keys" in listed.stdout
    assert "... 4 more" in listed.stdout

    frame = trident_state_frame(spark, built)
    assert {
        (r.state, json.loads(r.key)[0], json.loads(r.value))
        for r in frame.collect()
        if r.state == "counts"
    } == {("counts", word, n) for word, n in EXPECTED.items()}


def test_a_memory_map_says_it_cannot_be_read_from_outside():
    done = sparkstorm("state", "trident_word_count", "--from", "examples/trident_word_count.py")
    assert done.returncode == 0, done.stderr
    assert "MemoryMapState lives in the run's memory and is gone with the run" in done.stdout
