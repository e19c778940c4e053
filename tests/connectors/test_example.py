"""examples/rabbitmq_word_count.py runs as it is and counts every word exactly once."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections import Counter

import psycopg
import pytest
from psycopg import sql

from examples import rabbitmq_word_count as example
from examples.word_count import generated_sentences
from tests.run_process import ROOT

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
        drop(queue, table)


def drop(queue: str, table: str) -> None:
    """Delete the test's queue and table."""
    import pika

    connection = pika.BlockingConnection(pika.URLParameters(example.URL))
    connection.channel().queue_delete(queue)
    connection.close()
    with psycopg.connect(example.DSN, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkstorm.cli", "run", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_sparkstorm_run_runs_the_example_on_its_queue(tmp_path):
    queue = f"sparkstorm-example-{uuid.uuid4().hex[:8]}"
    table = f"sparkstorm_example_{uuid.uuid4().hex[:8]}"
    env = {"SPARKSTORM_EXAMPLE_QUEUE": queue, "SPARKSTORM_EXAMPLE_TABLE": table}
    sentences = generated_sentences(50, vocabulary=50)
    try:
        example.publish(example.URL, queue, sentences)
        done = cli(
            "examples/rabbitmq_word_count.py", "--engine", "local", "--duration", "4", env=env
        )
        assert done.returncode == 0, done.stderr[-3000:]
        with psycopg.connect(example.DSN) as conn:
            query = sql.SQL("SELECT word, count FROM {}").format(sql.Identifier(table))
            counts = dict(conn.execute(query).fetchall())
        assert counts == dict(Counter(w for s in sentences for w in s.split()))
    finally:
        drop(queue, table)


def test_a_missing_connectors_extra_is_one_line_saying_what_to_install(tmp_path):
    """pika made unimportable (as without the extra): exit 2, one line, no traceback."""
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['pika'] = None\n")
    done = subprocess.run(
        [sys.executable, "-m", "sparkstorm.cli", "run", "examples/rabbitmq_word_count.py"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "the RabbitMQ connector needs the package 'pika'" in line
    assert "pip install 'sparkstorm[connectors]'" in line
