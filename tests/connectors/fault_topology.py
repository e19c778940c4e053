"""The topology the fault suite runs through ``sparkstorm run``: source -> check -> PostgreSQL.

Configured by environment variables, so one file serves every source and scenario:
``FAULT_SOURCE`` (rabbitmq, redis, nats, kafka, or kafka-arrow: Kafka in columns, its
check an ``ArrowBolt``), ``FAULT_NAME`` (queue, stream, topic
and table name), ``FAULT_URL`` (Kafka: the bootstrap servers), and optionally
``FAULT_MAX_RETRIES`` (the attempts a message gets: Kafka's retry policy counts retries
after the first, so it is given one less), ``FAULT_PENDING`` (max spout
pending, default 200), ``FAULT_BATCH`` (the sink's batch, default 50: below what each
sink task holds, so batches fill before the flush tick), ``FAULT_ASSIGNMENT`` (Kafka:
``group`` to let the consumer group deal the partitions) and
``FAULT_TIMEOUT`` (message timeout, default 30 s).

A message body is ``"<id>|<text>"``; ``poison`` always fails. The sink upserts one row
per id and counts its writes, so a row written twice is a duplicate the suite can see.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkstorm import Bolt, Config, Fields, Spout, TopologyBuilder
from sparkstorm.arrow import ArrowBolt, KafkaArrowSpout
from sparkstorm.connectors.kafka import (
    KafkaSpout,
    KafkaSpoutConfig,
    KafkaSpoutRetryExponentialBackoff,
)
from sparkstorm.connectors.nats_jetstream import NatsJetStreamSpout
from sparkstorm.connectors.postgres import PostgresUpsertBolt
from sparkstorm.connectors.rabbitmq import RabbitMQSpout
from sparkstorm.connectors.redis_streams import RedisStreamSpout

DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
GROUP = "sparkstorm"


def source_spout(source: str, name: str, url: str, max_retries: int | None) -> Spout:
    """The spout under test; its dead letters go to ``<name>-dead`` (NATS: ``<name>.dead``).

    Kafka's offsets are committed every 0.1 s (its default, 30 s, is longer than a test).
    """
    if source == "rabbitmq":
        return RabbitMQSpout(url, name, max_retries=max_retries, dead_letter_queue=f"{name}-dead")
    if source == "redis":
        return RedisStreamSpout(
            url, name, GROUP, max_retries=max_retries, dead_letter_stream=f"{name}-dead"
        )
    if source == "nats":
        return NatsJetStreamSpout(
            url,
            name,
            f"{name}.in",
            GROUP,
            max_retries=max_retries,
            dead_letter_subject=f"{name}.dead",
            nak_delay_secs=0.2,
        )
    if source in ("kafka", "kafka-arrow"):
        retry = KafkaSpoutRetryExponentialBackoff(
            0.0, 0.05, None if max_retries is None else max_retries - 1, 1.0
        )
        group = os.environ.get("FAULT_ASSIGNMENT") == "group"
        config = KafkaSpoutConfig(
            url,
            [name],
            GROUP,
            assignment="group" if group else "manual",
            retry=retry,
            dead_letter_topic=f"{name}-dead",
            offset_commit_period_ms=100,
            # a member that died is evicted after 6 s (Tansu's first join: half of it)
            extra={"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000} if group else {},
        )
        return (
            KafkaArrowSpout(config, batch_rows=50)
            if source == "kafka-arrow"
            else KafkaSpout(config)
        )
    msg = f"FAULT_SOURCE must be rabbitmq, redis, nats, kafka or kafka-arrow, not {source!r}"
    raise ValueError(msg)


class Check(Bolt):
    """Passes ``(id, 1)`` on, anchored; fails ``poison``."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        body = tup.values[-1]  # RabbitMQ: (body,); NATS: (subject, data); Redis: (id, data);
        # Kafka: (topic, partition, offset, key, value)
        if isinstance(body, dict):
            body = body["body"]
        if body == "poison":
            self.collector.fail(tup)
            return
        self.collector.emit([int(body.partition("|")[0]), 1], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("id", "writes"))


class CheckColumns(ArrowBolt):
    """``Check`` over a batch: ``(id, 1)`` a row, anchored to it; ``poison`` rows failed."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute_batch(self, batch: pa.RecordBatch) -> None:
        values = batch.column("value")
        poison = pc.fill_null(pc.equal(values, "poison"), False).to_numpy(zero_copy_only=False)
        if poison.any():
            self.collector.fail_rows(poison, "poison")
        rows = np.nonzero(~poison)[0]
        heads = pc.list_element(pc.split_pattern(values.take(rows), "|", max_splits=1), 0)
        ids = pc.cast(heads, pa.int64())
        out = pa.record_batch([ids, pa.array(np.ones(len(rows), np.int64))], ["id", "writes"])
        self.collector.emit_batch(out, anchors=rows)
        self.collector.ack_rows(~poison)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("id", "writes"))


def topology() -> tuple[Any, Config]:
    env = os.environ
    name = env["FAULT_NAME"]
    retries = int(env["FAULT_MAX_RETRIES"]) if env.get("FAULT_MAX_RETRIES") else None
    builder = TopologyBuilder()
    builder.set_spout("source", source_spout(env["FAULT_SOURCE"], name, env["FAULT_URL"], retries))
    check = CheckColumns() if env["FAULT_SOURCE"] == "kafka-arrow" else Check()
    builder.set_bolt("check", check, 2).shuffle_grouping("source")
    sink = PostgresUpsertBolt(
        DSN,
        name,
        ["id", "writes"],
        ["id"],
        batch_size=int(env.get("FAULT_BATCH", "50")),
        update={"writes": "t.writes + 1"},
    )
    builder.set_bolt("sink", sink, 2).fields_grouping("check", Fields("id"))
    conf = Config()
    conf.set_max_spout_pending(int(env.get("FAULT_PENDING", "200")))
    conf.set_message_timeout_secs(float(env.get("FAULT_TIMEOUT", "30")))
    return builder.create_topology(), conf
