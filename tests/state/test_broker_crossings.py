"""Every broker spout that can hold work, feeding a stateful bolt, on every engine and mode.

A spout holds work while it emits nothing: entries read ahead of ``max.spout.pending``
(Redis), a record due for a retry (Kafka), a message nak-ed and not back yet (NATS), a
delivery waiting in the client (RabbitMQ). A checkpoint's drain pauses the spouts, so
what they hold must not count as work in flight there, while an until-idle run must
wait for it. Once, on the continuous mode, the drain waited for it: no checkpoint ever
committed, a rollback came every few seconds and replayed every pending tree for ever.

Each run fails one message's first attempt (its spout replays it) and must commit,
end by itself once the source is drained, and leave exact counts in committed state.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from sparkstorm.state.stores import open_store
from tests.conftest import REDIS_URL, run_on
from tests.connectors.brokers import Broker, make_broker
from tests.state import broker_topology

pytestmark = pytest.mark.services
MESSAGES = 60
DEADLINE_SECS = 60
"""A bound on each run: one that never commits, and so never ends, fails the test."""


@pytest.fixture
def broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    source = make_broker(request.param, f"crossing_{uuid.uuid4().hex[:8]}", request)
    source.create()
    try:
        yield source
    finally:
        source.delete()


@pytest.mark.parametrize("engine", ["local", "spark", "continuous"], indirect=True)
@pytest.mark.parametrize("broker", ["redis", "kafka", "nats", "rabbitmq"], indirect=True)
def test_a_broker_spout_into_a_stateful_bolt_commits_and_counts_exactly(
    broker, engine, redis_prefix
):
    broker.publish([f"{i}|message {i}".encode() for i in range(MESSAGES)])
    name = f"crossing-{uuid.uuid4().hex[:8]}"
    config = {"url": REDIS_URL, "key_prefix": redis_prefix}
    result = run_on(
        engine,
        broker_topology.build(broker.kind, broker.name, broker.spout_url),
        broker_topology.conf("redis", config),
        name=name,
        until_idle=True,
        duration=DEADLINE_SECS,
        spark_ui=False,
    )
    source = result.stats["source"]
    summary = f"source {source}, {broker.where_it_stands()}"
    assert result.elapsed_secs < DEADLINE_SECS - 5, f"it did not end by itself: {summary}"
    assert source["acked"] >= MESSAGES, summary
    assert source["fail_reasons"].get("explicit", 0) >= 1, summary  # the replay happened
    store = open_store("redis", config, name)
    assert store.committed_txid() >= 0, f"no checkpoint committed: {summary}"
    counts: dict[int, int] = {}
    for task in store.tasks():
        for key, count in store.load(task)[1].items():
            counts[key] = counts.get(key, 0) + count
    assert counts == broker_topology.expected(MESSAGES), summary
    assert broker.remaining() == 0, summary
