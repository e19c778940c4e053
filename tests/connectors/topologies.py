"""Test topologies for the connectors: RabbitMQ -> split -> PostgreSQL rows per word."""

from __future__ import annotations

import random

import psycopg
from psycopg import sql

from sparkstorm import Bolt, Config, Fields, TopologyBuilder
from sparkstorm.connectors.postgres import PostgresUpsertBolt
from sparkstorm.connectors.rabbitmq import RabbitMQSpout

URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
WORDS_PER_SENTENCE = 8


class CheckingSpout(RabbitMQSpout):
    """A RabbitMQSpout that checks, at each ack, that the sentence's words are committed."""

    def __init__(self, url, queue, table, **kwargs):
        super().__init__(url, queue, **kwargs)
        self.table = table

    def open(self, conf, context, collector):
        super().open(conf, context, collector)
        self.db = psycopg.connect(DSN, autocommit=True)
        self.query = sql.SQL("SELECT count(*) FROM {} WHERE sentence_id = %s").format(
            sql.Identifier(self.table)
        )
        self.violations = []
        self.acked = 0

    def ack(self, msg_id):
        generation, tag = msg_id
        entry = self.in_flight.get(tag) if generation == self.generation else None
        if entry is not None:
            sentence_id = int(entry[1].decode().partition("|")[0])
            (committed,) = self.db.execute(self.query, [sentence_id]).fetchone()
            if committed != WORDS_PER_SENTENCE:
                self.violations.append((sentence_id, committed))
            self.acked += 1
        super().ack(msg_id)

    def close(self):
        super().close()
        self.db.close()


class SplitRows(Bolt):
    """Emits (sentence_id, pos, word, 1) per word, anchored; fails ``fail_rate`` of inputs
    and every body containing "poison"."""

    def __init__(self, fail_rate=0.0):
        self.fail_rate = fail_rate

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.rng = random.Random(context.get_this_task_id())

    def execute(self, tup):
        body = tup[0]
        if "poison" in body or self.rng.random() < self.fail_rate:
            self.collector.fail(tup)
            return
        sentence_id, _, sentence = body.partition("|")
        for pos, word in enumerate(sentence.split()):
            self.collector.emit([int(sentence_id), pos, word, 1], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("sentence_id", "pos", "word", "writes"))


def create_words_table(table):
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} (sentence_id int, pos int, word text, writes int NOT NULL, "
                "PRIMARY KEY (sentence_id, pos))"
            ).format(sql.Identifier(table))
        )


def words_topology(queue, table, *, fail_rate=0.0, max_pending=200, spout=None):
    builder = TopologyBuilder()
    builder.set_spout("sentences", spout or CheckingSpout(URL, queue, table))
    builder.set_bolt("split", SplitRows(fail_rate), 2).shuffle_grouping("sentences")
    builder.set_bolt(
        "sink",
        PostgresUpsertBolt(
            DSN,
            table,
            ["sentence_id", "pos", "word", "writes"],
            ["sentence_id", "pos"],
            batch_size=400,
            update={"writes": "t.writes + 1"},
        ),
        2,
    ).fields_grouping("split", Fields("sentence_id")).add_configuration(
        Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 1
    )
    conf = Config()
    conf.set_max_spout_pending(max_pending)
    conf.set_message_timeout_secs(30)
    conf[Config.SPARKSTORM_SPOUT_BATCH] = max_pending
    return builder.create_topology(), conf


def row_count(table):
    with psycopg.connect(DSN) as conn:
        return conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
        ).fetchone()[0]
