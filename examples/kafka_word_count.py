"""Sentences from Kafka -> split -> count -> Kafka, at-least-once end to end.

    python examples/kafka_word_count.py --publish 1000 --only   # publish 1,000 sentences
    sparkstorm run examples/kafka_word_count.py                 # count what is unread
    python examples/kafka_word_count.py --publish 1000          # publish, then count them

The consumer group goes on from its committed offsets: a run counts what was published
since the last one, and says ``emitted 0`` when nothing was.

Needs the connectors' packages (``pip install -e '.[connectors]'``) and a Kafka broker
at ``SPARKSTORM_EXAMPLE_KAFKA`` (default ``127.0.0.1:9092``); to try it on this machine,
``noida-db start --only kafka --kafka-port 9092 --data-dir /tmp/sparkstorm-kafka`` (from
``pip install -e '.[dev]'``) in another shell. Sentences are read from the
topic ``sentences`` (``SPARKSTORM_EXAMPLE_TOPIC``) by the consumer group
``kafka-word-count``; each word's count goes to ``word-counts`` (``..._COUNTS_TOPIC``),
keyed by the word, so the last record of a key is its count.

A record's offset is committed only once its words' counts were confirmed written to
``word-counts`` (storm-kafka-client's at-least-once, with a ``KafkaBolt`` that acks on
the broker's delivery report). A replayed record is not counted twice: the count bolt
remembers which (partition, offset, position) it counted, and sends the count again.
"""

from __future__ import annotations

import argparse
import os
import sys

from sparkstorm import Bolt, Config, Fields, TopologyBuilder, run
from sparkstorm.connectors.kafka import KafkaBolt, KafkaSpout, KafkaSpoutConfig

try:
    from examples.word_count import generated_sentences
except ModuleNotFoundError:  # run as a file from any folder: its own folder is on the path
    from word_count import generated_sentences  # type: ignore[no-redef]

SERVERS = os.environ.get("SPARKSTORM_EXAMPLE_KAFKA", "127.0.0.1:9092")
TOPIC = os.environ.get("SPARKSTORM_EXAMPLE_TOPIC", "sentences")
COUNTS_TOPIC = os.environ.get("SPARKSTORM_EXAMPLE_COUNTS_TOPIC", "word-counts")
GROUP = "kafka-word-count"
UNTIL_IDLE = True
"""``sparkstorm run`` stops once the topic is read and every count written (``-t 0``:
until Ctrl-C, for a stream)."""


class SplitSentence(Bolt):
    """Emits (record, position, word) for each word of a record's value, anchored."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        record = (tup["partition"], tup["offset"])
        for pos, word in enumerate(tup["value"].split()):
            self.collector.emit([record, pos, word], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("record", "pos", "word"))


class IdempotentCount(Bolt):
    """Counts each (record, position) once, however often it is replayed; emits the count."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.seen: set[tuple[tuple[int, int], int]] = set()
        self.counts: dict[str, int] = {}

    def execute(self, tup):
        key, word = (tup["record"], tup["pos"]), tup["word"]
        if key not in self.seen:
            self.seen.add(key)
            self.counts[word] = self.counts.get(word, 0) + 1
        self.collector.emit([word, str(self.counts[word])], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("key", "message"))


def build(servers: str = SERVERS, topic: str = TOPIC, counts_topic: str = COUNTS_TOPIC):
    config = KafkaSpoutConfig(servers, [topic], GROUP, offset_commit_period_ms=1000)
    builder = TopologyBuilder()
    builder.set_spout("sentences", KafkaSpout(config), 2)
    builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", IdempotentCount(), 2).fields_grouping("split", Fields("word"))
    builder.set_bolt("counts", KafkaBolt(servers, counts_topic), 2).fields_grouping(
        "count", Fields("key")
    )
    conf = Config()
    conf.set_max_spout_pending(1000)
    return builder.create_topology(), conf


def topology():
    """The topology on the default broker and topics (``sparkstorm run`` calls this)."""
    return build()


def publish(servers: str, topic: str, sentences: list[str]) -> None:
    """Write ``sentences`` to ``topic``, one record each."""
    from confluent_kafka import KafkaException, Producer

    from sparkstorm.connectors.kafka_client_log import with_client_log

    # the client's own log goes through sparkstorm's: one line when the broker is down
    producer = Producer(with_client_log({"bootstrap.servers": servers}))
    try:
        producer.list_topics(timeout=5)
    except KafkaException:
        sys.exit(
            f"no Kafka broker answers at {servers}: start one (noida-db start --only kafka "
            "--kafka-port 9092 --data-dir /tmp/sparkstorm-kafka; see docs/connectors.md) "
            "or give --servers HOST:PORT"
        )
    for sentence in sentences:
        producer.produce(topic, sentence.encode())
        producer.poll(0)
    if producer.flush(30) > 0:
        sys.exit(f"the broker at {servers} did not take every sentence")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--servers", default=SERVERS)
    parser.add_argument("--publish", type=int, default=0, help="publish N sentences first")
    parser.add_argument("--only", action="store_true", help="publish, and count nothing")
    parser.add_argument("--engine", default="spark", choices=["spark", "local"])
    args = parser.parse_args(argv)
    if args.publish:
        publish(args.servers, TOPIC, generated_sentences(args.publish, vocabulary=50))
        if args.only:
            print(f"published {args.publish:,} sentences to {TOPIC!r} at {args.servers}")
            return 0
    built, conf = build(args.servers)
    result = run(built, conf, engine=args.engine)
    spout = result.stats["sentences"]
    print(f"acked {spout['acked']:,}  failed {spout['failed']:,} {spout['fail_reasons']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
