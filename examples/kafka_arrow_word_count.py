"""Sentences from Kafka -> split -> count -> Kafka, in columns, at-least-once end to end.

    python examples/kafka_arrow_word_count.py --publish 1000   # publish, then run on Spark
    sparkstorm run examples/kafka_arrow_word_count.py           # count what is in the topic

``examples/kafka_word_count.py`` with Arrow components: ``KafkaArrowSpout`` reads the
topic ``sentences`` a record batch at a time, each record one message; a pyarrow split
anchors every word to its record; a count emits each word's running count, anchored to
the word; ``KafkaArrowBolt`` writes the counts to ``word-counts`` (keyed by the word, so
the last record of a key is its count) and acks a row once the broker confirmed it. A
record's offset is committed only once every count of its words was written.

A replayed record's words are counted again (at-least-once); the tuple example's count
remembers what it counted, and Trident (docs/trident.md) counts exactly once.
Needs the connectors' packages and a Kafka broker at ``SPARKSTORM_EXAMPLE_KAFKA``
(default ``127.0.0.1:9092``).
"""

from __future__ import annotations

import argparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

try:
    from examples.kafka_word_count import COUNTS_TOPIC, SERVERS, TOPIC, publish
except ModuleNotFoundError:  # run as a file from any folder: its own folder is on the path
    from kafka_word_count import COUNTS_TOPIC, SERVERS, TOPIC, publish  # type: ignore[no-redef]
from sparkstorm import Config, Fields, TopologyBuilder, run
from sparkstorm.arrow import ArrowBolt, KafkaArrowBolt, KafkaArrowSpout
from sparkstorm.connectors.kafka import KafkaSpoutConfig

try:
    from examples.word_count import generated_sentences
except ModuleNotFoundError:  # run as a file from any folder: its own folder is on the path
    from word_count import generated_sentences  # type: ignore[no-redef]

GROUP = "kafka-arrow-word-count"
UNTIL_IDLE = True
"""``sparkstorm run`` stops once the topic is read and every count written."""


class Split(ArrowBolt):
    """A batch of records into a batch of words, each anchored to its record."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute_batch(self, batch):
        lists = pc.split_pattern(batch.column("value"), " ")
        words = pa.record_batch([pc.list_flatten(lists)], names=["word"])
        self.collector.emit_batch(words, anchors=pc.list_parent_indices(lists))
        self.collector.ack_batch(batch)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class RunningCount(ArrowBolt):
    """Emits ``(word, count)`` for every word, its count so far, anchored to the word.

    Computed over arrays: the batch's distinct words are looked up once each, and an
    occurrence's count is its word's total before the batch plus its rank within it.
    """

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.ids: dict[str, int] = {}
        self.totals = np.zeros(1024, np.int64)

    def execute_batch(self, batch):
        encoded = pc.dictionary_encode(batch.column("word"))
        ids = self.ids
        distinct = [ids.setdefault(w, len(ids)) for w in encoded.dictionary.to_pylist()]
        if len(ids) > len(self.totals):
            self.totals = np.concatenate([self.totals, np.zeros(len(ids), np.int64)])
        word = np.asarray(distinct, np.int64)[encoded.indices.to_numpy()]
        order = np.argsort(word, kind="stable")
        ranked = word[order]
        starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
        lengths = np.diff(np.r_[starts, len(word)])
        rank = np.empty(len(word), np.int64)
        rank[order] = np.arange(len(word)) - np.repeat(starts, lengths)
        counts = self.totals[word] + rank + 1
        self.totals[ranked[starts]] += lengths
        out = pa.record_batch([batch.column("word"), pa.array(counts)], names=["key", "value"])
        self.collector.emit_batch(out, anchors=np.arange(len(word)))
        self.collector.ack_batch(batch)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("key", "value"))


def build(servers: str = SERVERS, topic: str = TOPIC, counts_topic: str = COUNTS_TOPIC):
    config = KafkaSpoutConfig(servers, [topic], GROUP, offset_commit_period_ms=1000)
    builder = TopologyBuilder()
    builder.set_spout("sentences", KafkaArrowSpout(config), 2)
    builder.set_bolt("split", Split(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", RunningCount(), 2).fields_grouping("split", Fields("word"))
    builder.set_bolt("counts", KafkaArrowBolt(servers, counts_topic), 2).fields_grouping(
        "count", Fields("key")
    )
    conf = Config()
    conf.set_max_spout_pending(8000)
    return builder.create_topology(), conf


def topology():
    """The topology on the default broker and topics (``sparkstorm run`` calls this)."""
    return build()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--servers", default=SERVERS)
    parser.add_argument("--publish", type=int, default=0, help="publish N sentences first")
    parser.add_argument("--engine", default="spark", choices=["spark", "local"])
    args = parser.parse_args(argv)
    if args.publish:
        publish(args.servers, TOPIC, generated_sentences(args.publish, vocabulary=50))
    built, conf = build(args.servers)
    result = run(built, conf, engine=args.engine, until_idle=True)
    spout = result.stats["sentences"]
    print(f"acked {spout['acked']:,}  failed {spout['failed']:,} {spout['fail_reasons']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
