"""examples/rabbitmq_word_count.py runs as it is and counts every word exactly once."""

from __future__ import annotations

import uuid
from collections import Counter

import psycopg
import pytest
from psycopg import sql

from examples import rabbitmq_word_count as example
from examples.word_count import generated_sentences

pytestmark = pytest.mark.services


def test_example_counts_every_word_once_despite_failures(capsys):
    queue = f"sparkstorm-example-{uuid.uuid4().hex[:8]}"
    table = f"sparkstorm_example_{uuid.uuid4().hex[:8]}"
    try:
        example.main(
            [
                "--queue",
                queue,
                "--table",
                table,
                "--publish",
                "500",
                "--fail-rate",
                "0.2",
                "--engine",
                "local",
            ]
        )
        with psycopg.connect(example.DSN) as conn:
            counts = dict(
                conn.execute(
                    sql.SQL("SELECT word, count FROM {}").format(sql.Identifier(table))
                ).fetchall()
            )
        expected = Counter(w for s in generated_sentences(500, vocabulary=50) for w in s.split())
        assert counts == dict(expected)
        out = capsys.readouterr().out
        assert "acked 500" in out and "'explicit'" in out
    finally:
        import pika

        connection = pika.BlockingConnection(pika.URLParameters(example.URL))
        connection.channel().queue_delete(queue)
        connection.close()
        with psycopg.connect(example.DSN, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
