"""``assignment="group"``: two runs share a topic's partitions, and one takes over when
the other dies, on Tansu (the broker that evicts a member that died without leaving).

Both runs are ``sparkstorm run`` of the fault suite's topology (Kafka -> check ->
PostgreSQL, a row per message id counting its writes) while sentences keep coming.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from tests.connectors.brokers import Kafka, with_table
from tests.connectors.kafka_broker import TansuBroker
from tests.connectors.test_faults import PENDING, Cli, healthy, writes

pytestmark = pytest.mark.services


@pytest.fixture
def tansu(tmp_path) -> Iterator[TansuBroker]:
    broker = TansuBroker(tmp_path / "tansu")
    broker.start()
    yield broker
    broker.stop()


def holds(run: Cli) -> set[int]:
    """The partitions ``run``'s spout holds now: its last "assigned" line says which
    (Tansu does not describe a group's members)."""
    lines = [line for line in run.output().splitlines() if ": assigned " in line]
    if not lines:
        return set()
    named = lines[-1].split(": assigned ", 1)[1].split(" by group", 1)[0]
    return {int(p.rsplit("/", 1)[1]) for p in named.split(", ") if p != "none"}


class Feeder:
    """Publishes 20 healthy messages every 0.1 s, numbering on, until stopped."""

    def __init__(self, source: Kafka) -> None:
        self.source, self.sent = source, 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._feed, daemon=True)
        self.thread.start()

    def _feed(self) -> None:
        while not self.stopped.wait(0.1):
            self.source.publish(healthy(20, start=self.sent))
            self.sent += 20

    def stop(self) -> int:
        self.stopped.set()
        self.thread.join()
        return self.sent


def test_a_second_run_shares_the_partitions_and_takes_over_those_of_a_killed_one(tansu, tmp_path):
    name = f"group_{uuid.uuid4().hex[:8]}"
    with with_table(Kafka(name, tansu), "id int PRIMARY KEY, writes int NOT NULL") as source:
        feeder = Feeder(source)
        (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
        first = Cli(
            source, "local", tmp_path / "a", "--name", "a", pending=PENDING, assignment="group"
        )
        second = None
        try:
            first.until(lambda: len(writes(source)) >= 100, "the first run writing", 60)
            second = Cli(
                source, "local", tmp_path / "b", "--name", "b", pending=PENDING, assignment="group"
            )
            second.until(
                lambda: len(holds(first)) == len(holds(second)) == 1, "the partitions split", 60
            )
            assert holds(first) | holds(second) == {0, 1}
            first.kill()  # SIGKILL: it never leaves the group; Tansu evicts it
            read_again = source.written_not_committed(len(writes(source)))
            second.until(lambda: holds(second) == {0, 1}, "the survivor taking both", 60)
            sent = feeder.stop()
            second.until(lambda: len(writes(source)) == sent, "every message written", 60)
            # every offset committed (summed: Tansu's log end offsets are wrong)
            committed = source.committed_total
            second.until(lambda: committed() == sent, "every offset committed", 30)
        finally:
            feeder.stop()
            for run in (first, second):
                if run is not None and run.process.poll() is None:
                    run.kill()
        rows = writes(source)
        assert sorted(rows) == list(range(sent))  # nothing lost
        duplicated = sum(1 for n in rows.values() if n > 1)
        # Written twice: at most what was in flight or acked but not committed at the kill
        assert duplicated <= PENDING + read_again, (duplicated, read_again)
