"""The fault suite's view of each broker: create, publish, count, read dead letters, and
drop the spout's connection, through each broker's own client or admin tool."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import nats
import pika
import pytest
import redis

from tests.connectors.fault_topology import GROUP
from tests.connectors.kafka_broker import KafkaBroker


@dataclass
class DeadLetter:
    body: bytes
    attempts: int
    reason: str


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Broker:
    """One source under test, with its names derived from ``name``."""

    kind: str
    malformed_url: str  # a mistake people make: no scheme, or the wrong one
    closed_port_says = "efused"
    """What the error for a closed port says (librdkafka only times out)."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def spout_url(self) -> str:
        """The URL the topology's spout is given."""
        raise NotImplementedError

    def bad_credentials_url(self) -> str:
        raise NotImplementedError

    def closed_port_url(self) -> str:
        raise NotImplementedError

    def create(self) -> None:
        raise NotImplementedError

    def delete(self) -> None:
        raise NotImplementedError

    def publish(self, bodies: list[bytes]) -> None:
        raise NotImplementedError

    def remaining(self) -> int:
        """Messages not acked yet: waiting, or delivered and unacked."""
        raise NotImplementedError

    def dead_letters(self) -> list[DeadLetter]:
        """The dead letters (RabbitMQ's are taken off their queue)."""
        raise NotImplementedError

    def dead_count(self) -> int:
        """How many dead letters there are, leaving them in place."""
        raise NotImplementedError

    def drop_connections(self) -> int:
        """Close the spout's connections from the server's side; how many were closed."""
        raise NotImplementedError

    def written_not_committed(self, written: int) -> int:
        """Of ``written`` messages processed by a run killed now, how many its source will
        hand out again though they were acked: none where each ack reaches the broker."""
        return 0

    def where_it_stands(self) -> str:
        """For a failure's message: what the source holds, in its own terms."""
        return f"{self.remaining()} message(s) remaining"


class RabbitMQ(Broker):
    kind = "rabbitmq"
    url = "amqp://guest:guest@127.0.0.1:5672/%2F"
    malformed_url = "http://127.0.0.1:15672/"  # the management UI's address

    @property
    def spout_url(self) -> str:
        return self.url

    def bad_credentials_url(self) -> str:
        return "amqp://guest:wrong-secret@127.0.0.1:5672/%2F"

    def closed_port_url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{closed_port()}/%2F"

    def _channel(self) -> Any:
        try:
            connection = pika.BlockingConnection(pika.URLParameters(self.url))
        except pika.exceptions.AMQPError as exc:
            pytest.fail(
                f"RabbitMQ is not reachable at 127.0.0.1:5672 ({exc!r}); start it with "
                "'rabbitmq-server -detached'"
            )
        return connection.channel()

    def create(self) -> None:
        channel = self._channel()
        for queue in (self.name, f"{self.name}-dead"):
            channel.queue_declare(queue, durable=True)
        channel.connection.close()

    def delete(self) -> None:
        channel = self._channel()
        for queue in (self.name, f"{self.name}-dead"):
            channel.queue_delete(queue)
        channel.connection.close()

    def publish(self, bodies: list[bytes], first: int = 0) -> None:
        """Publish ``bodies`` with message ids ``m<first>``, ``m<first + 1>``, ...: a
        message id is the message's identity, so a later batch must go on numbering."""
        channel = self._channel()
        for i, body in enumerate(bodies, start=first):
            channel.basic_publish("", self.name, body, pika.BasicProperties(message_id=f"m{i}"))
        channel.connection.close()

    def _depth(self, queue: str) -> int:
        channel = self._channel()
        depth = channel.queue_declare(queue, passive=True).method.message_count
        channel.connection.close()
        return depth

    def remaining(self) -> int:
        """Messages ready in the queue (counted once the spout's connection is closed,
        when RabbitMQ has requeued whatever it left unacked)."""
        return self._depth(self.name)

    def dead_count(self) -> int:
        return self._depth(f"{self.name}-dead")

    def dead_letters(self) -> list[DeadLetter]:
        channel = self._channel()
        letters = []
        while True:
            method, properties, body = channel.basic_get(f"{self.name}-dead", auto_ack=True)
            if method is None:
                break
            headers = properties.headers or {}
            letters.append(
                DeadLetter(
                    body,
                    int(headers["x-sparkstorm-attempts"]),
                    str(headers["x-sparkstorm-last-failure"]),
                )
            )
        channel.connection.close()
        return letters

    def drop_connections(self) -> int:
        listing = subprocess.run(
            ["rabbitmqctl", "-q", "list_connections", "pid", "client_properties"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        pids = [line.split()[0] for line in listing.splitlines() if f":{self.name}" in line]
        for pid in pids:
            subprocess.run(
                ["rabbitmqctl", "close_connection", pid, "fault suite: broker-side close"],
                capture_output=True,
                check=True,
            )
        return len(pids)


class Redis(Broker):
    kind = "redis"
    url = "redis://127.0.0.1:6379/0"
    malformed_url = "127.0.0.1:6379"  # no scheme

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.client = redis.Redis.from_url(self.url)
        try:
            self.client.ping()
        except redis.ConnectionError as exc:
            pytest.fail(f"Redis is not reachable at 127.0.0.1:6379 ({exc}); start redis-server")

    @property
    def spout_url(self) -> str:
        return self.url

    def bad_credentials_url(self) -> str:
        return "redis://nobody:wrong-secret@127.0.0.1:6379/0"

    def closed_port_url(self) -> str:
        return f"redis://127.0.0.1:{closed_port()}/0"

    def create(self) -> None:
        self.client.xgroup_create(self.name, GROUP, "0", mkstream=True)

    def delete(self) -> None:
        self.client.delete(self.name, f"{self.name}-dead")
        self.client.close()

    def publish(self, bodies: list[bytes]) -> None:
        with self.client.pipeline(transaction=False) as pipe:
            for body in bodies:
                pipe.xadd(self.name, {"body": body})
            pipe.execute()

    def remaining(self) -> int:
        (group,) = [g for g in self.client.xinfo_groups(self.name) if g["name"] == GROUP.encode()]
        return group["pending"] + (group["lag"] or 0)

    def dead_letters(self) -> list[DeadLetter]:
        return [
            DeadLetter(
                fields[b"body"],
                int(fields[b"x-sparkstorm-attempts"]),
                fields[b"x-sparkstorm-last-failure"].decode(),
            )
            for _, fields in self.client.xrange(f"{self.name}-dead")
        ]

    def dead_count(self) -> int:
        return self.client.xlen(f"{self.name}-dead")

    def drop_connections(self) -> int:
        mine = [
            c for c in self.client.client_list() if c["name"].startswith(f"sparkstorm:{self.name}:")
        ]
        for client in mine:
            self.client.client_kill_filter(_id=client["id"])
        return len(mine)


class Nats(Broker):
    """NATS has no way to close one client's connection without a system account, so the
    spout connects through a loopback TCP proxy that the test can cut."""

    kind = "nats"
    url = "nats://127.0.0.1:4222"
    malformed_url = "127.0.0.1:4222"  # no scheme

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.proxy = Proxy(4222)

    @property
    def spout_url(self) -> str:
        return f"nats://127.0.0.1:{self.proxy.port}"

    def bad_credentials_url(self) -> str:
        msg = "needs a server with authorization: see the nats_auth fixture"
        raise NotImplementedError(msg)

    def closed_port_url(self) -> str:
        return f"nats://127.0.0.1:{closed_port()}"

    def _js(self, work: Any) -> Any:
        async def session() -> Any:
            try:
                client = await nats.connect(self.url, connect_timeout=2, max_reconnect_attempts=0)
            except Exception as exc:
                pytest.fail(
                    f"NATS is not reachable at 127.0.0.1:4222 ({exc!r}); start nats-server -js"
                )
            try:
                return await work(client.jetstream())
            finally:
                await client.close()

        return asyncio.run(session())

    def create(self) -> None:
        async def create(jsm: Any) -> None:
            await jsm.add_stream(name=self.name, subjects=[f"{self.name}.in"])
            await jsm.add_stream(name=f"{self.name}_dead", subjects=[f"{self.name}.dead"])

        self._js(create)

    def delete(self) -> None:
        self.proxy.close()

        async def delete(jsm: Any) -> None:
            for stream in (self.name, f"{self.name}_dead"):
                await jsm.delete_stream(stream)

        self._js(delete)

    def publish(self, bodies: list[bytes]) -> None:
        async def send(jsm: Any) -> None:
            for body in bodies:
                await jsm.publish(f"{self.name}.in", body)

        self._js(send)

    def remaining(self) -> int:
        async def info(jsm: Any) -> int:
            try:
                consumer = await jsm.consumer_info(self.name, GROUP)
            except nats.js.errors.NotFoundError:  # no spout has bound it yet
                return (await jsm.stream_info(self.name)).state.messages
            return consumer.num_pending + consumer.num_ack_pending

        return self._js(info)

    def dead_letters(self) -> list[DeadLetter]:
        async def read(jsm: Any) -> list[DeadLetter]:
            state = (await jsm.stream_info(f"{self.name}_dead")).state
            letters = []
            for seq in range(state.first_seq, state.last_seq + 1) if state.messages else ():
                msg = await jsm.get_msg(f"{self.name}_dead", seq)
                headers = msg.headers or {}
                letters.append(
                    DeadLetter(
                        msg.data,
                        int(headers["X-Sparkstorm-Attempts"]),
                        headers["X-Sparkstorm-Last-Failure"],
                    )
                )
            return letters

        return self._js(read)

    def dead_count(self) -> int:
        async def count(jsm: Any) -> int:
            return (await jsm.stream_info(f"{self.name}_dead")).state.messages

        return self._js(count)

    def drop_connections(self) -> int:
        return self.proxy.drop()


class Proxy:
    """Forwards loopback connections to ``target_port``; ``drop`` cuts them all, as a server
    closing its side would."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def drop(self) -> int:
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        return len(pairs)

    def close(self) -> None:
        self.server.close()
        self.drop()


class Kafka(Broker):
    """A topic of two partitions on the session's noida-db broker (``kafka_broker.py``);
    its "server-side close" is the broker restarted, its data kept."""

    kind = "kafka"
    malformed_url = "kafka://127.0.0.1:9092"  # a scheme Kafka does not take
    closed_port_says = "cannot reach"
    partitions = 2

    def __init__(self, name: str, server: KafkaBroker) -> None:
        super().__init__(name)
        self.server = server

    @property
    def spout_url(self) -> str:
        return self.server.bootstrap

    def closed_port_url(self) -> str:
        return f"127.0.0.1:{closed_port()}"

    def create(self) -> None:
        self.server.topic_named(self.name, self.partitions)
        self.server.topic_named(f"{self.name}-dead")

    def delete(self) -> None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.server.bootstrap})
        for future in admin.delete_topics([self.name, f"{self.name}-dead"]).values():
            with contextlib.suppress(Exception):  # gone with a restarted broker's data
                future.result(10)

    def publish(self, bodies: list[bytes]) -> None:
        self.server.produce(self.name, bodies)

    def _ends(self, topic: str, partitions: int) -> list[tuple[int, int, int]]:
        """(low, high, committed by the spout's group) per partition of ``topic``."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.server.bootstrap, "group.id": GROUP})
        try:
            asked = [TopicPartition(topic, p) for p in range(partitions)]
            committed = consumer.committed(asked, timeout=10)
            return [
                (*consumer.get_watermark_offsets(tp, timeout=10), kept.offset)
                for tp, kept in zip(asked, committed, strict=True)
            ]
        finally:
            consumer.close()

    def partition_ends(self) -> list[tuple[int, int, int]]:
        """(low, high, committed by the spout's group) per partition: for a failure's
        message."""
        return self._ends(self.name, self.partitions)

    def where_it_stands(self) -> str:
        ends = ", ".join(
            f"{self.name}/{p}: low {low}, high {high}, committed {kept}"
            for p, (low, high, kept) in enumerate(self.partition_ends())
        )
        return f"partitions of group {GROUP!r}: {ends}"

    def committed_total(self) -> int:
        """The group's committed offsets, summed: the records it is done with."""
        return sum(max(low, kept) for low, _, kept in self._ends(self.name, self.partitions))

    def written_not_committed(self, written: int) -> int:
        """Kafka's offsets are committed every ``offset_commit_period_ms``: what was acked
        since the last commit is read again (storm-kafka-client's at-least-once)."""
        return max(0, written - self.committed_total())

    def remaining(self) -> int:
        """Records past the group's committed offsets."""
        return sum(
            high - max(low, kept) for low, high, kept in self._ends(self.name, self.partitions)
        )

    def dead_count(self) -> int:
        return sum(high - low for low, high, _ in self._ends(f"{self.name}-dead", 1))

    def dead_letters(self) -> list[DeadLetter]:
        letters = []
        for record in self.server.read(f"{self.name}-dead", self.dead_count()):
            headers = {k: v.decode() for k, v in record.headers() or []}
            letters.append(
                DeadLetter(
                    record.value(),
                    int(headers["sparkstorm.attempts"]),
                    headers["sparkstorm.reason"],
                )
            )
        return letters

    def drop_connections(self) -> int:
        self.server.stop()
        self.server.start()
        return 1


class KafkaArrow(Kafka):
    """Kafka read in columns: ``KafkaArrowSpout``, checked by an ``ArrowBolt``."""

    kind = "kafka-arrow"


BROKERS: dict[str, type[Broker]] = {b.kind: b for b in (RabbitMQ, Redis, Nats, Kafka, KafkaArrow)}


def make_broker(kind: str, name: str, request: pytest.FixtureRequest) -> Broker:
    """Broker ``kind`` with its names from ``name``; Kafka's on the session's broker."""
    if kind in ("kafka", "kafka-arrow"):
        return BROKERS[kind](name, request.getfixturevalue("kafka"))  # type: ignore[call-arg]
    return BROKERS[kind](name)


@contextlib.contextmanager
def with_table(source: Broker, columns: str) -> Iterator[Broker]:
    """``source`` created, and a PostgreSQL table of its name with ``columns``; both
    removed after."""
    import psycopg
    from psycopg import sql

    from tests.connectors.fault_topology import DSN

    source.create()
    table = sql.Identifier(source.name)
    try:
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE TABLE {} ({})").format(table, sql.SQL(columns)))
    except psycopg.OperationalError as exc:
        source.delete()
        pytest.fail(f"PostgreSQL is not reachable at 127.0.0.1:5432 ({exc}); start it")
    try:
        yield source
    finally:
        source.delete()
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))
