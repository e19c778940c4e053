"""At-least-once end to end against the real RabbitMQ and PostgreSQL on loopback."""

from __future__ import annotations

import time
import uuid

import pika
import psycopg
import pytest
from psycopg import sql

from examples.word_count import generated_sentences
from sparkstorm import run
from sparkstorm.connectors.rabbitmq import ATTEMPTS_HEADER, REASON_HEADER, RabbitMQSpout
from sparkstorm.control.clock import WallClock
from sparkstorm.control.superstep import TopologyRuntime
from sparkstorm.engines import make_engine
from tests.connectors.topologies import (
    DSN,
    URL,
    WORDS_PER_SENTENCE,
    CheckingSpout,
    create_words_table,
    row_count,
    words_topology,
)

pytestmark = pytest.mark.services


@pytest.fixture
def channel():
    try:
        connection = pika.BlockingConnection(pika.URLParameters(URL))
    except pika.exceptions.AMQPError as exc:
        pytest.fail(
            f"RabbitMQ is not reachable at 127.0.0.1:5672 ({exc!r}); start it with "
            f"'rabbitmq-server -detached'"
        )
    ch = connection.channel()
    yield ch
    connection.close()


@pytest.fixture
def queue(channel):
    names = [f"sparkstorm-test-{uuid.uuid4().hex[:10]}"]
    channel.queue_declare(names[0], durable=True)
    yield names[0]
    for name in (names[0], names[0] + "-dlq"):
        channel.queue_delete(name)


@pytest.fixture
def table():
    name = f"sparkstorm_test_{uuid.uuid4().hex[:10]}"
    try:
        create_words_table(name)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL is not reachable at 127.0.0.1:5432 ({exc}); start it with "
            f"'pg_ctlcluster --skip-systemctl-redirect 15 main start'"
        )
    yield name
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))


def publish(channel, queue, count, poison=0):
    for i, sentence in enumerate(generated_sentences(count, vocabulary=300)):
        channel.basic_publish("", queue, f"{i}|{sentence}".encode())
    for j in range(poison):
        channel.basic_publish("", queue, f"{count + j}|poison pill".encode())


def queue_depth(channel, queue):
    return channel.queue_declare(queue, passive=True).method.message_count


def run_until(runtime, done, deadline_secs):
    deadline = time.monotonic() + deadline_secs
    while time.monotonic() < deadline:
        runtime.step()
        if runtime.idle():
            if done():
                return
            time.sleep(0.02)
    msg = f"not done after {deadline_secs}s: pending {runtime.pending_count()}"
    raise AssertionError(msg)


def test_10k_messages_with_failures_on_spark_lose_nothing(channel, queue, table, spark):
    messages = 10_000
    publish(channel, queue, messages)
    topology, conf = words_topology(queue, table, fail_rate=0.1, max_pending=2000)
    runtime = TopologyRuntime("mq", topology, conf, make_engine("spark", spark=spark), WallClock())
    spout = next(iter(runtime.spouts.values())).spout
    run_until(
        runtime,
        lambda: row_count(table) == messages * WORDS_PER_SENTENCE and not runtime.pending_count(),
        600,
    )
    stats = runtime.stats()["sentences"]
    runtime.kill()
    assert row_count(table) == messages * WORDS_PER_SENTENCE  # every message's words
    assert spout.acked == messages and spout.violations == []  # acked only after commit
    assert stats["fail_reasons"].get("explicit", 0) > 500  # ~10% failed, then redelivered
    assert queue_depth(channel, queue) == 0  # nothing left, nothing unacked


def test_poison_message_is_dead_lettered_with_its_reason(channel, queue, table):
    dlq = queue + "-dlq"
    publish(channel, queue, 20, poison=1)
    spout = CheckingSpout(URL, queue, table, max_retries=3, dead_letter_queue=dlq)
    topology, conf = words_topology(queue, table, spout=spout)
    runtime = TopologyRuntime("dlq", topology, conf, make_engine("local"), WallClock())
    run_until(
        runtime,
        lambda: queue_depth(channel, dlq) == 1 and row_count(table) == 20 * WORDS_PER_SENTENCE,
        120,
    )
    runtime.kill()
    assert spout_of(runtime).violations == []  # every ack came after the commit
    _, properties, body = channel.basic_get(dlq, auto_ack=True)
    assert body == b"20|poison pill"
    assert properties.headers[ATTEMPTS_HEADER] == 3
    assert "explicit by split:" in properties.headers[REASON_HEADER]
    assert queue_depth(channel, queue) == 0


def test_a_stop_while_the_sink_buffers_dead_letters_nothing(channel, queue, table):
    # One attempt allowed: before the graceful stop, every tree still waiting in the
    # sink's buffer failed with shutdown, counted as an attempt and was dead-lettered.
    dlq = queue + "-dlq"
    publish(channel, queue, 200)
    spout = CheckingSpout(URL, queue, table, max_retries=1, dead_letter_queue=dlq)
    topology, conf = words_topology(queue, table, spout=spout, max_pending=50)
    result = run(topology, conf, engine="local", duration=0.5)
    stats = result.stats["sentences"]
    assert stats["acked"] > 0 and stats["failed"] == 0  # the sink's next tick acked them
    assert queue_depth(channel, dlq) == 0
    assert stats["acked"] + queue_depth(channel, queue) == 200  # the rest wait, uncounted
    assert row_count(table) == stats["acked"] * WORDS_PER_SENTENCE


def test_a_shutdown_failure_returns_the_message_uncounted(channel, queue, table):
    dlq = queue + "-dlq"
    publish(channel, queue, 1)
    spout = CheckingSpout(URL, queue, table, max_retries=1, dead_letter_queue=dlq)
    topology, conf = words_topology(queue, table, spout=spout)
    runtime = TopologyRuntime("shutdown", topology, conf, make_engine("local"), WallClock())
    run_until(runtime, lambda: spout_of(runtime).in_flight, 30)
    runtime.kill(drain_secs=0)  # no drain: the delivery fails with shutdown at once
    assert runtime.stats()["sentences"]["fail_reasons"] == {"shutdown": 1}
    assert queue_depth(channel, dlq) == 0
    _, properties, body = channel.basic_get(queue, auto_ack=True)
    assert body.startswith(b"0|") and ATTEMPTS_HEADER not in (properties.headers or {})


def test_an_undecodable_body_without_retries_or_dead_letters_is_rejected(channel, queue, table):
    channel.basic_publish("", queue, b"\xff", pika.BasicProperties(message_id="bad"))
    spout = CheckingSpout(URL, queue, table)
    topology, conf = words_topology(queue, table, spout=spout)
    runtime = TopologyRuntime("reject", topology, conf, make_engine("local"), WallClock())
    run_until(runtime, lambda: runtime.errors, 30)
    runtime.kill()
    assert queue_depth(channel, queue) == 0  # not requeued, forever, in front of the rest
    assert "message bad on queue" in runtime.errors[0].message


def test_a_broker_that_cannot_be_reached_is_an_error_naming_where():
    spout = RabbitMQSpout("amqp://guest:guest@127.0.0.1:5999/%2F", "nowhere")
    topology, conf = words_topology("nowhere", "no_table", spout=spout)
    result = run(topology, conf, engine="local", until_idle=True)
    (error, *_) = [e for e in result.errors if e.component == "sentences"]
    assert error.message == (
        "ConnectionError: RabbitMQSpout cannot connect to 127.0.0.1:5999 (vhost '/') for "
        "queue 'nowhere': [Errno 111] Connection refused; retrying in 1 s"
    )


def spout_of(runtime):
    return next(iter(runtime.spouts.values())).spout


@pytest.mark.parametrize("header", ["abc", -4, "", {"x": 1}])
def test_an_attempts_header_that_is_no_count_is_a_first_attempt(
    channel, queue, table, header, caplog
):
    """Issue 54, defect 6: ``x-sparkstorm-attempts: abc`` raised in the spout; the message
    was neither acked, nacked nor dead-lettered, and held its prefetch slot for ever."""
    dlq = queue + "-dlq"
    channel.basic_publish(
        "",
        queue,
        b"0|poison pill",
        pika.BasicProperties(message_id="hostile", headers={ATTEMPTS_HEADER: header}),
    )
    spout = CheckingSpout(URL, queue, table, max_retries=2, dead_letter_queue=dlq)
    topology, conf = words_topology(queue, table, spout=spout)
    runtime = TopologyRuntime("hostile", topology, conf, make_engine("local"), WallClock())
    run_until(runtime, lambda: queue_depth(channel, dlq) == 1, 60)
    runtime.kill()
    assert runtime.errors == []
    _, properties, _ = channel.basic_get(dlq, auto_ack=True)
    assert properties.headers[ATTEMPTS_HEADER] == 2  # the header counted as no attempt
    said = [r.getMessage() for r in caplog.records if "not a count of attempts" in r.getMessage()]
    assert len(said) == 1 and "message hostile on queue" in said[0]
    assert queue_depth(channel, queue) == 0


@pytest.mark.parametrize("header", ["99999999999999999999", 2**63 - 1])
def test_an_attempts_header_past_every_limit_is_dead_lettered_and_stalls_nothing(
    channel, queue, table, header
):
    """Issue 65, defect 7: such a count made the republish fail inside pika, the
    delivery was neither acked nor nacked, and two of them stalled a prefetch-2 spout."""
    dlq = queue + "-dlq"
    for n in range(2):
        channel.basic_publish(
            "",
            queue,
            f"{100 + n}|poison pill".encode(),
            pika.BasicProperties(message_id=f"huge{n}", headers={ATTEMPTS_HEADER: header}),
        )
    publish(channel, queue, 3)  # healthy, behind them
    spout = CheckingSpout(URL, queue, table, max_retries=2, dead_letter_queue=dlq, prefetch=2)
    topology, conf = words_topology(queue, table, spout=spout)
    runtime = TopologyRuntime("huge", topology, conf, make_engine("local"), WallClock())
    run_until(
        runtime,
        lambda: queue_depth(channel, dlq) == 2 and row_count(table) == 3 * WORDS_PER_SENTENCE,
        60,
    )
    runtime.kill()
    assert runtime.errors == []
    for _ in range(2):
        _, properties, _ = channel.basic_get(dlq, auto_ack=True)
        assert properties.headers[ATTEMPTS_HEADER] == 2  # the limit: exhausted at once
    assert queue_depth(channel, queue) == 0
