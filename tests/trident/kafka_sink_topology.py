"""Kafka to Kafka exactly once: a Kafka Trident spout -> each -> a transactional Kafka sink.

Run through ``sparkstorm run`` and SIGKILLed by ``test_kafka_sink.py``; configured by
environment variables: ``SINK_SERVERS`` (the broker), ``SINK_SOURCE`` and ``SINK_TOPIC``
(the topics read and written), ``SINK_NAME`` (the run and the consumer group) and
``SINK_BATCH`` (records a batch reads in a partition). Default settings otherwise: the
progress is kept in Kafka, beside the output (``KafkaProgress``). Each
input record is written as ``partition:offset``, so that the output shows which inputs
it holds, and how often.
"""

from __future__ import annotations

import os
from typing import Any

from sparkstorm import Config, Fields
from sparkstorm.connectors.kafka_trident import (
    KafkaTridentSpoutTransactional,
    TridentKafkaStateFactory,
    TridentKafkaStateUpdater,
)
from sparkstorm.trident import BaseArrowFunction, BaseFunction, TridentTopology


class Where(BaseFunction):
    """``partition:offset`` of the input record."""

    def execute(self, tup, collector):
        collector.emit([f"{tup[0]}:{tup[1]}"])


class ArrowWhere(BaseArrowFunction):
    """:class:`Where` in columns: ``partition:offset`` of each row, with pyarrow."""

    def execute_batch(self, batch):
        import pyarrow as pa
        import pyarrow.compute as pc

        text = [pc.cast(batch.column(i), pa.string()) for i in (0, 1)]
        line = pc.binary_join_element_wise(*text, ":")
        return pa.record_batch([line], names=["line"]), pa.array(range(batch.num_rows))


def topology() -> tuple[Any, Config]:
    servers, name = os.environ["SINK_SERVERS"], os.environ["SINK_NAME"]
    spout = KafkaTridentSpoutTransactional(
        servers, os.environ["SINK_SOURCE"], name, max_batch_size=int(os.environ["SINK_BATCH"])
    )
    sink = TridentKafkaStateFactory(
        servers, os.environ["SINK_TOPIC"], value_field="line", transactional=True
    )
    trident = TridentTopology()
    (
        trident.new_stream("records", spout)
        .each(Fields("partition", "offset"), Where(), Fields("line"))
        .parallelism_hint(2)
        .partition_persist(sink, Fields("line"), TridentKafkaStateUpdater())
        .parallelism_hint(2)
    )
    conf = Config()
    conf.set_max_spout_pending(3)
    return trident.build(), conf
