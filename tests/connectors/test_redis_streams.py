"""Redis Streams end to end against the real Redis on loopback: nothing lost, nothing stuck."""

from __future__ import annotations

import uuid

import pytest
import redis

from sparkstorm import Bolt, Config, Fields, TopologyBuilder, run
from sparkstorm.connectors.redis_streams import (
    ATTEMPTS_FIELD,
    REASON_FIELD,
    RedisHashBolt,
    RedisStreamSpout,
)
from tests.conftest import run_on

pytestmark = pytest.mark.services
URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
def client():
    client = redis.Redis.from_url(URL, decode_responses=True)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        pytest.fail(f"Redis is not reachable at 127.0.0.1:6379 ({exc}); start redis-server")
    yield client
    client.close()


@pytest.fixture
def names(client):
    base = f"sparkstorm-test-{uuid.uuid4().hex[:10]}"
    yield base
    keys = client.keys(f"{base}*")
    if keys:
        client.delete(*keys)


class Check(Bolt):
    """Fails "poison" always and "flaky" on its first attempt; passes the rest on."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.seen = set()

    def execute(self, tup):
        body = tup["data"]["body"]
        first = tup["id"] not in self.seen
        self.seen.add(tup["id"])
        if body == "poison" or (body == "flaky" and first):
            self.collector.fail(tup)
            return
        self.collector.emit([tup["id"], body], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "body"))


class Hold(Bolt):
    """Never acks: its entries can only end by a stop."""

    def execute(self, tup):
        pass


def topology(names, spout, sink=True):
    builder = TopologyBuilder()
    builder.set_spout("entries", spout)
    if sink:
        builder.set_bolt("check", Check(), 2).fields_grouping("entries", Fields("id"))
        writer = RedisHashBolt(URL, "id", ["body"], key_prefix=f"{names}:row:")
        builder.set_bolt("sink", writer, 2).shuffle_grouping("check")
    else:
        builder.set_bolt("hold", Hold()).shuffle_grouping("entries")
    conf = Config()
    conf.set_message_timeout_secs(5)
    return builder.create_topology(), conf


def pending(client, stream, group):
    return client.xpending(stream, group)["pending"]


def test_every_entry_ends_written_or_dead_lettered(client, names, engine, request):
    stream, dlq = f"{names}:in", f"{names}:dead"
    ids = [client.xadd(stream, {"body": f"hello {i}"}) for i in range(200)]
    flaky = client.xadd(stream, {"body": "flaky"})
    poison = client.xadd(stream, {"body": "poison"})
    spout = RedisStreamSpout(URL, stream, "g", max_retries=3, dead_letter_stream=dlq)
    spark = request.getfixturevalue("spark") if engine == "spark" else None
    result = run_on(engine, *topology(names, spout), spark, until_idle=True)
    for entry_id in [*ids, flaky]:
        assert client.hgetall(f"{names}:row:{entry_id}")["body"] in {"flaky"} | {
            f"hello {i}" for i in range(200)
        }
    assert pending(client, stream, "g") == 0  # every entry acked
    ((_, dead),) = client.xrange(dlq)
    assert dead["body"] == "poison" and dead["x-sparkstorm-source-id"] == poison
    assert dead[ATTEMPTS_FIELD] == "3" and dead[REASON_FIELD].startswith("explicit by check:")
    reasons = result.stats["entries"]["fail_reasons"]
    assert reasons == {"explicit": 4}  # flaky once, poison three times


def test_a_restart_takes_back_its_own_pending_entries(client, names):
    stream = f"{names}:in"
    for i in range(10):
        client.xadd(stream, {"body": f"hello {i}"})
    held = RedisStreamSpout(URL, stream, "g")
    run(*topology(names, held, sink=False), engine="local", duration=0.5)
    assert pending(client, stream, "g") == 10  # the stop failed them with shutdown: kept
    assert client.xpending_range(stream, "g", "-", "+", 1)[0]["consumer"] == "entries-0"
    again = RedisStreamSpout(URL, stream, "g")
    result = run(*topology(names, again), engine="local", until_idle=True)
    assert result.stats["entries"]["acked"] == 10 and pending(client, stream, "g") == 0


def test_entries_of_a_consumer_that_is_gone_are_claimed(client, names):
    stream = f"{names}:in"
    for i in range(10):
        client.xadd(stream, {"body": f"hello {i}"})
    client.xgroup_create(stream, "g", "0")
    client.xreadgroup("g", "ghost", {stream: ">"}, count=10)  # read, then died
    spout = RedisStreamSpout(URL, stream, "g")
    topo, conf = topology(names, spout)
    conf.set_message_timeout_secs(1)  # claimable after 2 s idle
    result = run(topo, conf, engine="local", duration=4)
    assert result.stats["entries"]["acked"] == 10
    assert pending(client, stream, "g") == 0


def test_an_undecodable_entry_is_dead_lettered_naming_it(client, names):
    stream, dlq = f"{names}:in", f"{names}:dead"
    raw = redis.Redis.from_url(URL)
    bad = raw.xadd(stream, {b"body": b"\xff\xfe"}).decode()
    raw.close()
    client.xadd(stream, {"body": "fine"})
    spout = RedisStreamSpout(URL, stream, "g", max_retries=1, dead_letter_stream=dlq)
    result = run(*topology(names, spout), engine="local", until_idle=True)
    assert pending(client, stream, "g") == 0
    assert client.xlen(dlq) == 1 and result.stats["entries"]["acked"] == 1
    assert any(bad in e.message and "not utf-8 text" in e.message for e in result.errors)


def test_an_unreachable_redis_is_an_error_naming_where():
    spout = RedisStreamSpout("redis://127.0.0.1:6399/0", "nowhere", "g")
    result = run(*topology("nowhere", spout, sink=False), engine="local", until_idle=True)
    (error, *_) = result.errors
    assert "RedisStreamSpout cannot use stream 'nowhere' at 127.0.0.1:6399 db 0" in error.message
