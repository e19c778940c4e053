"""RabbitMQ as a Trident spout: a core spout read in batches, non-transactional.

Its messages are acked to the broker once their batch committed; a failed batch's are
requeued and come back in a later batch (at-least-once, as docs/trident.md says).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter

import pytest

from sparkstorm import Fields
from sparkstorm.connectors.rabbitmq import RabbitMQSpout
from sparkstorm.trident import LocalDRPC, TridentTopology
from tests.connectors.brokers import RabbitMQ
from tests.trident.ops import FailOnceOn, Split
from tests.trident.test_failures import counted, counts_of

pytestmark = pytest.mark.services


@pytest.fixture
def queue():
    broker = RabbitMQ(f"trident_{uuid.uuid4().hex[:8]}")
    broker.create()
    yield broker
    broker.delete()


def test_a_queue_read_in_batches_acks_after_the_commit_and_requeues_a_failed_batch(
    cluster_factory, queue, tmp_path
):
    bodies = [f"w{i % 7} common" for i in range(300)]
    queue.publish([body.encode() for body in bodies])
    topology, drpc = TridentTopology(), LocalDRPC()
    stream = (
        topology.new_stream("queue", RabbitMQSpout(queue.spout_url, queue.name))
        .each(Fields("body"), Split(), Fields("token"))
        .each(Fields("token"), FailOnceOn("w3", str(tmp_path / "failed")), Fields("word"))
    )
    counted(topology, stream, drpc)
    cluster = cluster_factory("local")
    cluster.submit_topology("rabbit", {"topology.max.spout.pending": 2}, topology.build())
    expected = Counter(w for body in bodies for w in body.split())
    # RabbitMQ hands a requeued message back when it likes: an idle moment can come
    # before it does, so the run goes on until every word is counted or 30 s passed
    deadline = time.monotonic() + 30
    cluster.wait_until_idle()
    while counts_of(drpc) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
        cluster.wait_until_idle()
    assert (tmp_path / "failed").exists()  # a batch failed: its messages were requeued
    assert counts_of(drpc) == expected
    assert queue.remaining() == 0  # every message acked, once its batch committed
    assert cluster.stats("rabbit")["trident-coordinator"]["failed"] >= 1  # that batch
