"""Exactly once into Redis and PostgreSQL: writes that fail after the fact count once.

A transactional spout (``FeederBatchSpout``) feeds a word count into a map state whose
every fifth ``multi_put`` per partition writes and then raises, as a reply lost on the
network. Transactional and opaque maps end with exact counts; a non-transactional map
counts the replays again (the negative control: the exact checks can fail).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter

import psycopg
import pytest
import redis

from sparkstorm import Fields
from sparkstorm.trident import Count, FeederBatchSpout, TridentTopology
from sparkstorm.trident.state.postgres import PostgresMapState
from sparkstorm.trident.state.redis import RedisMapState
from tests.conftest import REDIS_URL
from tests.trident.ops import FlakyMap, Split

pytestmark = pytest.mark.services

FEEDS = [[[f"w{(i * 7 + j) % 11} w{(i + j) % 5} common"] for j in range(4)] for i in range(12)]
EXPECTED = Counter(word for batch in FEEDS for (sentence,) in batch for word in sentence.split())


DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
FACTORIES = {"redis": RedisMapState, "postgres": PostgresMapState}
WHERE = {"redis": REDIS_URL, "postgres": DSN}


@pytest.fixture
def hash_name():
    name = f"test_{uuid.uuid4().hex[:8]}"
    yield name
    client = redis.Redis.from_url(REDIS_URL)
    client.delete(f"sparkstorm:trident:{name}", *client.keys(f"{name}:*"))
    with psycopg.connect(DSN, autocommit=True) as connection:
        connection.execute(f"DROP TABLE IF EXISTS sparkstorm_trident_{name}")


def stored_counts(name: str, kind: str, store: str = "redis") -> Counter[str]:
    """The counts as the documented layout keeps them, read from outside."""
    if store == "postgres":
        with psycopg.connect(DSN) as connection:
            rows = connection.execute(f"SELECT key, val FROM sparkstorm_trident_{name}").fetchall()
        return Counter({json.loads(key)[0]: val for key, val in rows})
    raw = redis.Redis.from_url(REDIS_URL).hgetall(f"sparkstorm:trident:{name}")
    value = "curr" if kind == "opaque" else "val"
    return Counter({json.loads(k)[0]: json.loads(v)[value] for k, v in raw.items()})


def run_word_count(cluster, name: str, kind: str, store: str = "redis") -> None:
    feeder = FeederBatchSpout(["sentence"])
    topology = TridentTopology()
    (
        topology.new_stream("sentences", feeder)
        .each(Fields("sentence"), Split(), Fields("word"))
        .group_by(Fields("word"))
        .persistent_aggregate(
            FlakyMap(FACTORIES[store](WHERE[store], name, kind)), Count(), Fields("count")
        )
        .parallelism_hint(2)
    )
    cluster.submit_topology(f"redis-{kind}", {}, topology.build())
    for batch in FEEDS:
        feeder.feed(batch)


# The superstep mode runs the same bolts and coordinator (its replays are in
# test_failures.py); at ~2 s a batch there, this scenario alone would take a minute.
@pytest.mark.parametrize("engine", ["local", "continuous"])
def test_a_transactional_map_counts_every_word_once(engine, cluster_factory, hash_name):
    run_word_count(cluster_factory(engine), hash_name, "transactional")
    assert stored_counts(hash_name, "transactional") == EXPECTED


@pytest.mark.parametrize("store", ["redis", "postgres"])
def test_an_opaque_map_counts_every_word_once(store, cluster_factory, hash_name):
    run_word_count(cluster_factory("local"), hash_name, "opaque", store)
    assert stored_counts(hash_name, "opaque", store) == EXPECTED


def test_a_transactional_postgres_map_counts_every_word_once(cluster_factory, hash_name):
    run_word_count(cluster_factory("continuous"), hash_name, "transactional", "postgres")
    assert stored_counts(hash_name, "transactional", "postgres") == EXPECTED


def test_a_non_transactional_map_counts_replays_again(cluster_factory, hash_name):
    run_word_count(cluster_factory("local"), hash_name, "non-transactional")
    counts = stored_counts(hash_name, "non-transactional")
    assert set(counts) == set(EXPECTED)
    assert all(counts[w] >= EXPECTED[w] for w in EXPECTED)
    assert counts != EXPECTED  # at least once: the replayed writes counted twice


def test_a_resubmitted_topology_goes_on_from_the_last_committed_txid(cluster_factory, hash_name):
    """The txid is kept in the checkpoint store: a new run's batches are not taken for old ones.

    Were txids to start again from 1, the map would skip batch 3 of the second run for
    the keys batch 3 of the first one wrote (the same txid, so "applied already").
    """
    conf = {
        "topology.state.provider": "redis",
        "topology.state.provider.config": {"url": REDIS_URL, "key_prefix": hash_name},
    }
    cluster = cluster_factory("local")
    batches = FEEDS[:3]
    for _ in range(2):
        feeder = FeederBatchSpout(["sentence"])
        topology = TridentTopology()
        (
            topology.new_stream("sentences", feeder)
            .each(Fields("sentence"), Split(), Fields("word"))
            .group_by(Fields("word"))
            .persistent_aggregate(
                RedisMapState.transactional(REDIS_URL, hash_name), Count(), Fields("count")
            )
        )
        cluster.submit_topology("resubmitted", conf, topology.build())
        for batch in batches:
            feeder.feed(batch)
        cluster.kill_topology("resubmitted")
    once = Counter(w for batch in batches for (sentence,) in batch for w in sentence.split())
    assert stored_counts(hash_name, "transactional") == once + once
