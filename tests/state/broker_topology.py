"""A broker spout feeding a stateful count: the crossing of a spout that holds work (an
entry read ahead, a record due for a retry, a message nak-ed) with checkpoints.

``check`` fails one message's first attempt, and its spout holds it for a replay
longer than a checkpoint interval (Kafka's retry backoff, NATS's nak delay), so a drain
begins while it is held; ``count`` keeps, per ``id % KEYS``, how many messages it saw.
"""

from __future__ import annotations

from typing import Any

from sparkstorm import Bolt, Config, Fields, Spout, StatefulBolt, TopologyBuilder
from sparkstorm.connectors.kafka import (
    KafkaSpout,
    KafkaSpoutConfig,
    KafkaSpoutRetryExponentialBackoff,
)
from sparkstorm.connectors.nats_jetstream import NatsJetStreamSpout
from tests.connectors.fault_topology import GROUP, source_spout

KEYS = 4
FAILED_ONCE = 3
"""The id whose first attempt ``check`` fails."""
HELD_SECS = 0.6
"""How long Kafka's and NATS's spouts hold the failed message: three checkpoint intervals."""


class FailOnce(Bolt):
    """Emits ``(id % KEYS,)`` anchored and acks; fails message ``FAILED_ONCE`` the first time."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.failed = False

    def execute(self, tup: Any) -> None:
        body = tup.values[-1]  # RabbitMQ: (body,); NATS: (subject, data); Redis: (id, data);
        if isinstance(body, dict):  # Kafka: (topic, partition, offset, key, value)
            body = body["body"]
        if isinstance(body, bytes):
            body = body.decode()
        ident = int(body.partition("|")[0])
        if ident == FAILED_ONCE and not self.failed:
            self.failed = True
            self.collector.fail(tup)
            return
        self.collector.emit([ident % KEYS], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("key"))


class CountByKey(StatefulBolt):
    """How many messages each key saw, in checkpointed state."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.counts = state

    def execute(self, tup: Any) -> None:
        key = tup.values[0]
        self.counts.put(key, self.counts.get(key, 0) + 1)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def spout(source: str, name: str, url: str) -> Spout:
    """The fault suite's spout for ``source``, holding a failed message :data:`HELD_SECS`."""
    if source == "kafka":
        retry = KafkaSpoutRetryExponentialBackoff(HELD_SECS, 0.05, None, 1.0)
        return KafkaSpout(
            KafkaSpoutConfig(url, [name], GROUP, retry=retry, offset_commit_period_ms=100)
        )
    if source == "nats":
        return NatsJetStreamSpout(url, name, f"{name}.in", GROUP, nak_delay_secs=HELD_SECS)
    return source_spout(source, name, url, max_retries=5)


def build(source: str, name: str, url: str) -> Any:
    """The broker's spout -> ``check`` (fails one first attempt) -> stateful ``count``."""
    builder = TopologyBuilder()
    builder.set_spout("source", spout(source, name, url))
    builder.set_bolt("check", FailOnce()).shuffle_grouping("source")
    builder.set_bolt("count", CountByKey(), 2).fields_grouping("check", Fields("key"))
    return builder.create_topology()


def conf(provider: str, config: dict[str, Any]) -> Config:
    """Checkpoints every 200 ms, a pending cap below what the spouts read ahead."""
    conf = Config()
    conf.set_max_spout_pending(20)
    conf.set_message_timeout_secs(20)
    conf.update(
        {
            "topology.state.provider": provider,
            "topology.state.provider.config": config,
            "topology.state.checkpoint.interval.ms": 200,
            "sparkstorm.idle.grace.secs": 1.0,
        }
    )
    return conf


def expected(messages: int) -> dict[int, int]:
    """The counts every key must end with: each message counted once."""
    counts: dict[int, int] = {}
    for ident in range(messages):
        counts[ident % KEYS] = counts.get(ident % KEYS, 0) + 1
    return counts
