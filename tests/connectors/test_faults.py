"""One fault suite for every source: RabbitMQ, Redis Streams, NATS JetStream and Kafka
(noida-db, started by the tests), each run through ``sparkstorm run`` in its own process
group.

The topology (``fault_topology.py``) is source -> check -> PostgreSQL, with one row per
message id that counts its writes: a message lost is a missing row, a duplicate is a row
written twice. What each scenario promises is in docs/connectors.md.

In the superstep mode the spout runs in the driver, as on the local engine and under
the same control plane, so what Spark would add is only its start-up, its stop and its
processes to kill; in the continuous mode the spout runs in a Spark worker, and acks on
its own connection there. Each scenario runs every source on the local engine and one
source on the continuous mode, a different one per scenario (two for the poison), so
that each source meets Spark: a Spark run of these costs 15-50 s here, and all of them
would be a third of the suite. A continuous worker SIGKILLed mid-run, RabbitMQ
redelivering what it held, is ``tests/state/test_sigkill_proof.py``'s last test, with
exact stateful counts on top.
The connection-level cases (bad URL, bad credentials, closed port) run on the local
engine, and the closed port once on the continuous mode, where the spout opens in a
Spark worker; ``tests/test_cli.py`` covers Spark's start-up.
Kafka is read by ``KafkaSpout`` and, in columns, by ``KafkaArrowSpout`` (source
``kafka-arrow``, checked by an ``ArrowBolt``); the columnar one meets the continuous
mode in two scenarios: the poison and undecodable records, and a Spark worker SIGKILLed
under its spout with the broker restarted after (its consumer and the group's commits
live in that worker). The two share their offsets, retries and commits. The driver's SIGKILL on that
mode is Redis's: what it tests is the control plane's, the same for every source.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from tests.connectors.brokers import BROKERS, Broker, closed_port, make_broker, with_table
from tests.connectors.fault_topology import DSN
from tests.run_process import ROOT, RunProcess, spark_python_workers

pytestmark = pytest.mark.services
UNDECODABLE = b"\xff\xfe not utf-8"
EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130
MESSAGES, PENDING = 1200, 200


@pytest.fixture(params=sorted(BROKERS))
def broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    name = f"fault_{request.param}_{uuid.uuid4().hex[:8]}"
    source = make_broker(request.param, name, request)
    with with_table(source, "id int PRIMARY KEY, writes int NOT NULL") as b:
        yield b


class Cli(RunProcess):
    """``sparkstorm run`` of the fault topology for ``broker``, in a new process group."""

    def __init__(
        self,
        broker: Broker,
        engine: str,
        tmp: Path,
        *args: str,
        url: str | None = None,
        **env: object,
    ) -> None:
        environment = {
            "FAULT_SOURCE": broker.kind,
            "FAULT_NAME": broker.name,
            "FAULT_URL": url or broker.spout_url,
            **{f"FAULT_{k.upper()}": str(v) for k, v in env.items()},
        }
        target = str(ROOT / "tests/connectors/fault_topology.py") + ":topology"
        super().__init__(target, engine, tmp, *args, env=environment)


def writes(broker: Broker) -> dict[int, int]:
    """Sink rows: id -> how many times it was written."""
    with psycopg.connect(DSN) as conn:
        rows = conn.execute(
            sql.SQL("SELECT id, writes FROM {}").format(sql.Identifier(broker.name))
        ).fetchall()
    return dict(rows)


def healthy(count: int, start: int = 0) -> list[bytes]:
    return [f"{i}|message {i}".encode() for i in range(start, start + count)]


def every_source_and_on_spark(*sources: str) -> pytest.MarkDecorator:
    """Every source on the local engine, and ``sources`` on Spark's continuous mode, where
    the spout runs in a Spark worker. The superstep mode's spout runs in the driver, as
    the local engine's, under the same control plane: the code under test is the same,
    so it is not run again there (``test_rabbitmq_postgres.py`` runs a source through
    Spark supersteps, and ``tests/state`` kills them)."""
    cases = [(kind, "local") for kind in sorted(BROKERS)]
    cases += [(source, "continuous") for source in sources]
    return pytest.mark.parametrize(("broker", "engine"), cases, indirect=["broker"])


@every_source_and_on_spark("nats")
def test_a_graceful_stop_then_a_run_until_idle_write_every_id_once(broker, engine, tmp_path):
    # One attempt allowed: a healthy message failed by the stop would be dead-lettered.
    # Sink batches larger than what is pending: rows are written on the sinks' 1 s ticks,
    # so the stop lands mid-run (unpaced, a quiet machine's local run wrote all 1,200 of
    # Redis's first).
    broker.publish(healthy(MESSAGES))
    first = Cli(broker, engine, tmp_path, max_retries=1, batch=500)
    first.until(lambda: len(writes(broker)) >= MESSAGES // 4, "a quarter of the rows")
    assert first.stop() == EXIT_INTERRUPTED
    assert "run failed" not in first.output(), first.output()
    stopped = writes(broker)
    assert len(stopped) < MESSAGES, "the stop was not mid-run"
    assert set(stopped.values()) == {1}  # what the stop drained was written once
    assert broker.dead_letters() == []
    # The happy path: the rest, in a run that ends by itself when the source is drained.
    # A grace of 3 s, not 0.5: a loaded machine may be slow to see what the stop returned.
    second = Cli(
        broker,
        engine,
        tmp_path,
        "--until-idle",
        "--conf",
        "sparkstorm.idle.grace.secs=3",
        max_retries=1,
    )
    assert second.wait() == 0, second.output()
    missing = sorted(set(range(MESSAGES)) - set(writes(broker)))
    logs = f"first run:\n{first.output()[-3000:]}\nsecond run:\n{second.output()[-3000:]}"
    assert not missing, f"ids never written: {missing}\n{logs}"
    assert writes(broker) == dict.fromkeys(range(MESSAGES), 1)  # every id, exactly once
    assert broker.remaining() == 0  # drained, nothing left unacked
    assert broker.dead_letters() == []


@every_source_and_on_spark("rabbitmq", "kafka-arrow")
def test_poison_and_undecodable_are_dead_lettered_and_the_rest_flows(broker, engine, tmp_path):
    # Max spout pending 1: a message that never ends would stall everything behind it.
    broker.publish([UNDECODABLE, b"poison", *healthy(8)])
    run = Cli(broker, engine, tmp_path, max_retries=2, pending=1, batch=1)
    run.until(lambda: len(writes(broker)) == 8 and broker.dead_count() == 2, "8 rows, 2 dead")
    assert run.stop() == EXIT_INTERRUPTED
    letters = {letter.body: letter for letter in broker.dead_letters()}
    assert sorted(letters) == sorted([UNDECODABLE, b"poison"])
    assert letters[b"poison"].attempts == 2  # exactly max_retries
    assert letters[b"poison"].reason.startswith("explicit by check:")
    if broker.kind.startswith("kafka"):  # storm-kafka-client's way: dead-lettered at once, untried
        assert letters[UNDECODABLE].attempts == 0
        assert letters[UNDECODABLE].reason.startswith("undecodable:")
    else:
        assert letters[UNDECODABLE].attempts == 2
        assert letters[UNDECODABLE].reason.startswith("error by source:")
    assert writes(broker) == dict.fromkeys(range(8), 1)
    assert broker.remaining() == 0
    assert "not utf-8 text" in run.output()  # the error says what is wrong with it


@every_source_and_on_spark("rabbitmq")
def test_sigkill_then_a_server_side_close_lose_nothing(broker, engine, tmp_path):
    broker.publish(healthy(MESSAGES))
    # NATS redelivers what the dead process held after its ack wait, three message
    # timeouts: a short one there. Elsewhere the default, so that a loaded machine's
    # slow supersteps do not time trees out and replay them (more duplicates).
    timeout = 5 if broker.kind == "nats" else 30
    first = Cli(broker, engine, tmp_path, pending=PENDING, timeout=timeout)
    first.until(lambda: len(writes(broker)) >= MESSAGES // 4, "a quarter of the rows")
    first.kill()  # the driver's whole process group, Spark's JVM and workers included
    killed_at = len(writes(broker))
    assert killed_at < MESSAGES, "the kill was not mid-run"
    read_again = broker.written_not_committed(killed_at)
    second = Cli(broker, engine, tmp_path, pending=PENDING, timeout=timeout)
    second.until(lambda: len(writes(broker)) >= (killed_at + MESSAGES) // 2, "more rows")
    # at a moment when the spout is between two connections (a missed heartbeat on a
    # loaded machine), there is none to close: ask again
    second.until(lambda: broker.drop_connections() > 0, "a connection of the spout's to close")
    second.until(lambda: len(writes(broker)) == MESSAGES, "every row")
    second.until(
        lambda: broker.remaining() == 0,
        "an empty source",
        timeout=60,
        detail=broker.where_it_stands,
    )
    if broker.kind in ("rabbitmq", "nats"):  # said where the spout runs: a Spark worker too
        said = "Spout reconnected to"  # (a worker's line comes with its next report)
        second.until(lambda: said in second.output(), "the reconnection said", timeout=60)
    assert second.stop() == EXIT_INTERRUPTED
    rows = writes(broker)
    assert sorted(rows) == list(range(MESSAGES))  # nothing lost
    # Written again: only what was in flight at the kill and at the close, each at most
    # max spout pending, and (Kafka) what was acked after the group's last commit.
    duplicated = sum(1 for n in rows.values() if n > 1)
    print(f"{broker.kind}/{engine}: {duplicated} messages written twice, {read_again} uncommitted")
    assert duplicated <= 2 * PENDING + read_again
    assert broker.dead_letters() == []
    output = second.output()
    assert "unknown delivery tag" not in output and "PRECONDITION_FAILED" not in output
    about_it = [line for line in output.splitlines() if "Spout" in line]
    assert len(about_it) <= 6, output  # a few lines about the close, not one per message


@pytest.mark.parametrize("broker", ["kafka-arrow"], indirect=True)
def test_a_spark_worker_killed_under_the_kafka_spout_loses_nothing(broker, tmp_path):
    """The continuous mode's spout runs in a Spark Python worker: SIGKILL one mid-run,
    then restart the broker under the workers that took over, and publish the last
    quarter of the messages after it. The spout is ``KafkaArrowSpout`` and the check an
    ``ArrowBolt``: the rows of a batch are messages, and those whose trees the dead
    worker held are replayed alone; ``KafkaSpout``'s offsets are the same code.

    The workers start again, the spout reads again from the group's commit, and every
    message is written; what is written twice is at most what was in flight or acked and
    not committed when the worker died, and what was in flight at the restart. (The
    driver's SIGKILL on this mode is Redis's above: the spout's code is Kafka's on every
    mode. The other sources' worker kill, with exact stateful counts, is
    ``tests/state/test_sigkill_proof.py``'s.)
    """
    after_restart = MESSAGES // 4  # published once the broker is back: read after it
    broker.publish(healthy(MESSAGES - after_restart))
    run = Cli(broker, "continuous", tmp_path, pending=PENDING)
    run.until(lambda: len(writes(broker)) >= MESSAGES // 4, "a quarter of the rows", 180)
    workers = spark_python_workers(run.process.pid)
    assert workers, "no Spark Python worker to kill"
    os.kill(random.choice(workers), signal.SIGKILL)
    killed_at = len(writes(broker))  # mid-run: a quarter of the messages is not out yet
    read_again = broker.written_not_committed(killed_at)
    published = MESSAGES - after_restart
    run.until(lambda: len(writes(broker)) > min(killed_at, published - 1), "rows after", 180)
    assert broker.drop_connections() > 0, "found no connection of the spout's to close"
    broker.publish(healthy(after_restart, start=published))

    def missing() -> str:
        return f"rows missing: {sorted(set(range(MESSAGES)) - set(writes(broker)))}"

    run.until(lambda: len(writes(broker)) == MESSAGES, "every row", 180, missing)
    run.until(lambda: broker.remaining() == 0, "every offset committed", 60, broker.where_it_stands)
    assert "lost" in run.output(), run.output()[-3000:]  # the loss was seen, and recovered
    assert run.stop() == EXIT_INTERRUPTED
    rows = writes(broker)
    assert sorted(rows) == list(range(MESSAGES))
    duplicated = sum(1 for n in rows.values() if n > 1)
    assert duplicated <= 2 * PENDING + read_again, (duplicated, read_again)
    assert broker.dead_letters() == []


def one_clear_line(run: Cli, expected_code: int, *needles: str) -> str:
    """The run ended by itself with ``expected_code``, saying what was wrong in one line."""
    code = run.wait(timeout=60)
    output = run.output()
    assert code == expected_code, output
    matching = [line for line in output.splitlines() if all(n in line for n in needles)]
    assert matching, f"no line with {needles}:\n{output}"
    assert "Traceback" not in output, output
    # a Kafka client's own log says a problem once, not a line per connection attempt
    assert not [line for line in output.splitlines() if line.startswith("%")], output
    assert sum("rdkafka#" in line for line in output.splitlines()) <= 2, output
    return output


CONNECTING = pytest.mark.parametrize(
    "broker", [k for k in sorted(BROKERS) if k != "kafka-arrow"], indirect=True
)
"""Every source but Kafka in columns, whose connection is ``KafkaSpout``'s own code."""


@CONNECTING
def test_a_malformed_url_is_refused_before_anything_starts(broker, tmp_path):
    run = Cli(broker, "local", tmp_path, url=broker.malformed_url)
    one_clear_line(run, EXIT_USAGE, "sparkstorm: error:", "is not a usable", "e.g.")


@CONNECTING
def test_a_closed_port_is_one_clear_line_and_a_failed_run(broker, tmp_path):
    url = broker.closed_port_url()
    port = url.rsplit(":", 1)[1].split("/")[0]
    run = Cli(broker, "local", tmp_path, "--until-idle", url=url)
    one_clear_line(run, EXIT_FAILED, f"127.0.0.1:{port}", broker.closed_port_says)


def test_a_closed_port_fails_the_run_on_the_continuous_mode_too(tmp_path):
    """There the spout opens in a Spark worker, whose first report (with the error) may
    come before the other worker has started: the run must still say it and fail. One
    source: what is under test is the report's way to the driver, not the connector."""
    name = f"fault_redis_{uuid.uuid4().hex[:8]}"
    with with_table(BROKERS["redis"](name), "id int PRIMARY KEY, writes int NOT NULL") as b:
        url = b.closed_port_url()
        port = url.rsplit(":", 1)[1].split("/")[0]
        run = Cli(b, "continuous", tmp_path, "--until-idle", url=url)
        one_clear_line(run, EXIT_FAILED, f"127.0.0.1:{port}", "efused")


# Not Kafka: the test broker, noida-db, has no SASL to refuse a password with.
@pytest.mark.parametrize(
    "broker", [k for k in sorted(BROKERS) if not k.startswith("kafka")], indirect=True
)
def test_bad_credentials_are_one_clear_line_without_the_password(broker, tmp_path, request):
    if broker.kind == "nats":
        url = request.getfixturevalue("nats_with_authorization")
    else:
        url = broker.bad_credentials_url()
    run = Cli(broker, "local", tmp_path, "--until-idle", url=url)
    output = one_clear_line(run, EXIT_FAILED, "127.0.0.1")
    assert "wrong-secret" not in output  # credentials never reach the logs
    assert any(
        word in output for word in ("ACCESS_REFUSED", "AuthenticationError", "Authorization")
    ), output


@pytest.fixture
def nats_with_authorization(tmp_path) -> Iterator[str]:
    """A second nats-server that requires a password; the URL gives the wrong one."""
    port = closed_port()
    server = subprocess.Popen(
        ["nats-server", "-a", "127.0.0.1", "-p", str(port), "--user", "app", "--pass", "right"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket_to(port):
                break
        except OSError:
            time.sleep(0.05)
    yield f"nats://app:wrong-secret@127.0.0.1:{port}"
    server.terminate()
    server.wait(10)


def socket_to(port: int):
    import socket

    return socket.create_connection(("127.0.0.1", port), timeout=1)
