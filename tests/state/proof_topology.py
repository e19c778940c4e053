"""The proof's word count: RabbitMQ -> split -> stateful count (Redis) -> PostgreSQL.

Run through ``sparkstorm run`` and SIGKILLed by ``test_sigkill_proof.py``; configured by
environment variables: ``PROOF_NAME`` (queue, or stream, and table), ``PROOF_SOURCE``
(``redis`` reads a Redis stream of that name, a spout that holds entries it read ahead
of ``max.spout.pending``; RabbitMQ by default), ``PROOF_REDIS_PREFIX`` (the
state's key prefix), ``PROOF_PENDING`` (max spout pending: a stateful topology takes at
most that many messages per checkpoint, as their acks wait for the commit), and on a
cluster of hosts ``PROOF_SERVICES_HOST`` (where its tasks reach the services) and
``PROOF_RABBITMQ_OPTIONS`` (the URL's query: ``?heartbeat=5``); ``PROOF_COLUMNS`` set,
the count is a ``StatefulArrowBolt`` (the split's words arrive as record batches). A message
body is ``"<number>|<sentence>"``; RabbitMQ's ``message_id`` names each message, so a
crash as a checkpoint commits counts nothing twice. The sink keeps the greatest count it
was sent per word: a count from state that was rolled back is never above the exact
one, and the last commit's is the exact one.
"""

from __future__ import annotations

import os
from typing import Any

from sparkstorm import BasicBolt, Config, Fields, TopologyBuilder
from sparkstorm.connectors.postgres import PostgresUpsertBolt
from sparkstorm.connectors.rabbitmq import RabbitMQSpout
from sparkstorm.connectors.redis_streams import RedisStreamSpout
from tests.state.bolts import StatefulArrowWordCount, StatefulWordCount

DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
RABBITMQ = "amqp://guest:guest@127.0.0.1:5672/%2F"
REDIS = "redis://127.0.0.1:6379/0"


class Split(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        body = tup.values[-1]  # RabbitMQ: (body,); Redis: (id, {"body": body})
        if isinstance(body, dict):
            body = body["body"]
        for word in body.partition("|")[2].split():
            collector.emit([word])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word"))


def _on_services_host(url: str) -> str:
    return url.replace("127.0.0.1", os.environ.get("PROOF_SERVICES_HOST", "127.0.0.1"))


def topology() -> tuple[Any, Config]:
    name = os.environ["PROOF_NAME"]
    builder = TopologyBuilder()
    if os.environ.get("PROOF_SOURCE") == "redis":
        builder.set_spout(
            "sentences", RedisStreamSpout(_on_services_host(REDIS), name, "sparkstorm")
        )
    else:
        rabbitmq = _on_services_host(RABBITMQ) + os.environ.get("PROOF_RABBITMQ_OPTIONS", "")
        builder.set_spout("sentences", RabbitMQSpout(rabbitmq, name))
    builder.set_bolt("split", Split(), 2).shuffle_grouping("sentences")
    count = StatefulArrowWordCount() if os.environ.get("PROOF_COLUMNS") else StatefulWordCount()
    builder.set_bolt("count", count, 2).fields_grouping("split", Fields("word"))
    sink = PostgresUpsertBolt(
        _on_services_host(DSN),
        name,
        ["word", "count"],
        ["word"],
        batch_size=50,
        update={"count": "GREATEST(t.count, EXCLUDED.count)"},
        flush_secs=0.2,
    )
    builder.set_bolt("sink", sink, 2).fields_grouping("count", Fields("word"))
    conf = Config()
    conf.set_max_spout_pending(int(os.environ.get("PROOF_PENDING", "100")))
    conf["topology.state.provider"] = "redis"
    conf["topology.state.provider.config"] = {
        "url": _on_services_host(REDIS),
        "key_prefix": os.environ["PROOF_REDIS_PREFIX"],
    }
    conf["topology.state.checkpoint.interval.ms"] = 300
    return builder.create_topology(), conf


def table_counts(name: str) -> dict[str, int]:
    """The sink's table: word -> the greatest count it was sent."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(DSN) as conn:
        query = sql.SQL("SELECT word, count FROM {}").format(sql.Identifier(name))
        return dict(conn.execute(query).fetchall())


def committed_counts(env: dict[str, str], name: str) -> dict[str, int]:
    """The count tasks' committed state, summed (each word lives in one task)."""
    from sparkstorm.config import resolve
    from sparkstorm.state.stores import open_store
    from sparkstorm.topology.plan import Plan

    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)  # the topology reads them when built; put back after
    try:
        built, conf = topology()
    finally:
        for key, value in saved.items():
            if value is None:
                del os.environ[key]
            else:
                os.environ[key] = value
    tasks = Plan(built, resolve(dict(conf))).component_tasks("count")
    store = open_store("redis", {"url": REDIS, "key_prefix": env["PROOF_REDIS_PREFIX"]}, name)
    counts: dict[str, int] = {}
    for task in tasks:
        for word, n in store.load(f"count:{task}")[1].items():
            counts[word] = counts.get(word, 0) + n
    return counts
