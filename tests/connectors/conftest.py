"""Fixtures of the connector tests: the session's Kafka-protocol broker."""

from tests.connectors.kafka_broker import kafka  # noqa: F401
