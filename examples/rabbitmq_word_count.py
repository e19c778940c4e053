"""Sentences from RabbitMQ -> split -> count -> PostgreSQL, at-least-once end to end.

    python examples/rabbitmq_word_count.py --publish 1000 --fail-rate 0.1
    sparkstorm run examples/rabbitmq_word_count.py     # consume what is in the queue

Needs the connectors' packages (``pip install -e '.[connectors]'``), RabbitMQ on
127.0.0.1:5672 (guest/guest) and PostgreSQL on 127.0.0.1:5432; the first form publishes
sentences first, the second runs the topology on the queue's messages as a stream
(Ctrl-C stops it). ``SPARKSTORM_EXAMPLE_QUEUE`` and ``SPARKSTORM_EXAMPLE_TABLE`` name
another queue and table.

Each message body is ``"<sentence id>|<sentence>"``. A message is acked to RabbitMQ only
when its words' counts are committed to PostgreSQL; ``--fail-rate`` makes the split bolt
fail that fraction of its inputs, which RabbitMQ then redelivers. Counting is made
idempotent by remembering which (sentence id, position) pairs were counted, and the sink
keeps the largest count per word, so replays never inflate the result.
"""

from __future__ import annotations

import argparse
import os
import random
import sys

from sparkstorm import Bolt, Config, Fields, TopologyBuilder, run
from sparkstorm.connectors.postgres import PostgresUpsertBolt
from sparkstorm.connectors.rabbitmq import RabbitMQSpout

try:
    from examples.word_count import generated_sentences
except ModuleNotFoundError:  # run as a file from any folder: its own folder is on the path
    from word_count import generated_sentences  # type: ignore[no-redef]

URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
QUEUE = os.environ.get("SPARKSTORM_EXAMPLE_QUEUE", "sparkstorm-sentences")
TABLE = os.environ.get("SPARKSTORM_EXAMPLE_TABLE", "sparkstorm_word_counts")


class SplitSentence(Bolt):
    """Parses "id|sentence", emits (sentence_id, pos, word) anchored; fails ``fail_rate``."""

    def __init__(self, fail_rate: float = 0.0):
        self.fail_rate = fail_rate

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.rng = random.Random(context.get_this_task_id())

    def execute(self, tup):
        if self.rng.random() < self.fail_rate:
            self.collector.fail(tup)
            return
        sentence_id, _, sentence = tup[0].partition("|")
        for pos, word in enumerate(sentence.split()):
            self.collector.emit([int(sentence_id), pos, word], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("sentence_id", "pos", "word"))


class IdempotentCount(Bolt):
    """Counts each (sentence_id, pos) once, however often it is replayed; emits the count."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.seen: set[tuple[int, int]] = set()
        self.counts: dict[str, int] = {}

    def execute(self, tup):
        key = (tup["sentence_id"], tup["pos"])
        word = tup["word"]
        if key not in self.seen:
            self.seen.add(key)
            self.counts[word] = self.counts.get(word, 0) + 1
        self.collector.emit([word, self.counts[word]], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word", "count"))


def create_table(dsn: str, table: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (word text PRIMARY KEY, count bigint NOT NULL)"
            ).format(sql.Identifier(table))
        )


def build(
    url: str, queue: str, dsn: str, table: str, fail_rate: float = 0.0, max_pending: int = 1000
):
    builder = TopologyBuilder()
    builder.set_spout("sentences", RabbitMQSpout(url, queue))
    builder.set_bolt("split", SplitSentence(fail_rate), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", IdempotentCount(), 2).fields_grouping("split", Fields("word"))
    builder.set_bolt(
        "sink",
        PostgresUpsertBolt(
            dsn,
            table,
            ["word", "count"],
            ["word"],
            batch_size=500,
            update={"count": "GREATEST(t.count, EXCLUDED.count)"},
        ),
        1,
    ).fields_grouping("count", Fields("word"))  # it flushes a partial batch every second
    conf = Config()
    conf.set_max_spout_pending(max_pending)
    conf.set_message_timeout_secs(30)
    return builder.create_topology(), conf


def topology():
    """The topology on the default queue and table (``sparkstorm run`` calls this)."""
    create_table(DSN, TABLE)
    return build(URL, QUEUE, DSN, TABLE)


def publish(url: str, queue: str, sentences: list[str]) -> None:
    import pika

    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.queue_declare(queue, durable=True)
    for i, sentence in enumerate(sentences):
        channel.basic_publish("", queue, f"{i}|{sentence}".encode())
    connection.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default=URL)
    parser.add_argument("--queue", default=QUEUE)
    parser.add_argument("--dsn", default=DSN)
    parser.add_argument("--table", default=TABLE)
    parser.add_argument("--publish", type=int, default=0, help="publish N sentences first")
    parser.add_argument("--fail-rate", type=float, default=0.0)
    parser.add_argument("--engine", default="spark", choices=["spark", "local"])
    parser.add_argument("--duration", type=float, default=None)
    args = parser.parse_args(argv)
    create_table(args.dsn, args.table)
    if args.publish:
        publish(args.url, args.queue, generated_sentences(args.publish, vocabulary=50))
    topology, conf = build(args.url, args.queue, args.dsn, args.table, args.fail_rate)
    result = run(topology, conf, engine=args.engine, duration=args.duration)
    spout = result.stats["sentences"]
    print(f"acked {spout['acked']:,}  failed {spout['failed']:,} {spout['fail_reasons']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
