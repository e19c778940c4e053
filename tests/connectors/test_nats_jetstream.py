"""NATS JetStream end to end against the real server on loopback: nothing lost, nothing stuck."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

import nats
import pytest

from sparkstorm import Bolt, Config, Fields, TopologyBuilder, run
from sparkstorm.config import resolve
from sparkstorm.connectors.nats_jetstream import (
    ATTEMPTS_HEADER,
    REASON_HEADER,
    NatsJetStreamSpout,
)
from tests.conftest import run_on

pytestmark = pytest.mark.services
URL = "nats://127.0.0.1:4222"


async def _with_js(work):
    try:
        client = await nats.connect(URL, connect_timeout=2, max_reconnect_attempts=0)
    except Exception as exc:
        pytest.fail(f"NATS is not reachable at 127.0.0.1:4222 ({exc!r}); start nats-server -js")
    try:
        return await work(client.jetstream())
    finally:
        await client.close()


def js(work):
    return asyncio.run(_with_js(work))


@pytest.fixture
def names():
    name = f"sparkstorm_{uuid.uuid4().hex[:10]}"

    async def create(jsm):
        await jsm.add_stream(name=name, subjects=[f"{name}.in.>"])
        await jsm.add_stream(name=f"{name}_dead", subjects=[f"{name}.dead"])

    js(create)
    yield name

    async def delete(jsm):
        for stream in (name, f"{name}_dead"):
            await jsm.delete_stream(stream)

    js(delete)


def publish(name, bodies):
    async def send(jsm):
        for i, body in enumerate(bodies):
            await jsm.publish(f"{name}.in.{i}", body)

    js(send)


class Check(Bolt):
    """Fails "poison" always, passes the rest on, and records what it saw."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup["data"] == "poison":
            self.collector.fail(tup)
            return
        self.collector.emit([tup["data"]], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("data"))


def topology(name, **options):
    builder = TopologyBuilder()
    spout = NatsJetStreamSpout(URL, name, f"{name}.in.>", "sparkstorm", **options)
    builder.set_spout("messages", spout)
    builder.set_bolt("check", Check(), 2).shuffle_grouping("messages")
    conf = Config({Config.SPARKSTORM_CAPTURE: ["check"]})
    conf.set_message_timeout_secs(5)
    conf.set_max_spout_pending(50)
    return builder.create_topology(), conf


def consumer_state(name):
    async def info(jsm):
        consumer = await jsm.consumer_info(name, "sparkstorm")
        return consumer.num_pending, consumer.num_ack_pending

    return js(info)


def test_every_message_is_acked_or_dead_lettered(names, engine, request, caplog):
    publish(names, [f"hello {i}".encode() for i in range(100)] + [b"poison"])
    spark = request.getfixturevalue("spark") if engine == "spark" else None
    topo, conf = topology(
        names, max_retries=2, dead_letter_subject=f"{names}.dead", nak_delay_secs=0.1
    )
    result = run_on(engine, topo, conf, spark, until_idle=True)
    seen = sorted(values[0] for values in result.captured[("check", "default")])
    assert seen == sorted(f"hello {i}" for i in range(100))  # each exactly once
    assert consumer_state(names) == (0, 0)  # nothing left, nothing unacked

    async def dead(jsm):
        msg = await jsm.get_last_msg(f"{names}_dead", f"{names}.dead")
        return msg.data, msg.headers

    data, headers = js(dead)
    # tried twice; a dead letter the server did not confirm (seen once on a loaded
    # machine) is said, and the message comes back for one more try
    retried = sum("the dead letter of message" in r.getMessage() for r in caplog.records)
    assert result.stats["messages"]["fail_reasons"] == {"explicit": 2 + retried}
    # the header is the server's delivery count: on a loaded machine a fetch cut short
    # at its deadline leaves a delivery the spout never saw (redelivered after ack_wait)
    assert data == b"poison" and int(headers[ATTEMPTS_HEADER]) >= 2
    assert headers[REASON_HEADER].startswith("explicit by check:")


def test_an_undecodable_payload_is_dead_lettered_naming_it(names):
    publish(names, [b"\xff\xfe", b"fine"])
    topo, conf = topology(names, max_retries=1, dead_letter_subject=f"{names}.dead")
    result = run(topo, conf, engine="local", until_idle=True)
    assert result.captured[("check", "default")] == [["fine"]]
    assert consumer_state(names) == (0, 0)
    assert any("not utf-8 text" in e.message for e in result.errors)


def test_an_unreachable_server_is_an_error_naming_where(names):
    builder = TopologyBuilder()
    spout = NatsJetStreamSpout("nats://127.0.0.1:4299", names, f"{names}.in.>", "x")
    builder.set_spout("messages", spout)
    builder.set_bolt("check", Check()).shuffle_grouping("messages")
    result = run(builder.create_topology(), {}, engine="local", until_idle=True)
    (error, *_) = result.errors
    assert "NatsJetStreamSpout cannot consume" in error.message
    assert "nats://127.0.0.1:4299: ConnectionRefusedError" in error.message


class _Collector:
    def __init__(self):
        self.ids = []

    def emit(self, values, stream="default", msg_id=None):
        self.ids.append(msg_id)

    def report_error(self, error):
        raise AssertionError(error)


class _Context:
    def get_this_component_id(self):
        return "messages"

    def get_this_task_id(self):
        return 1


def _emit_all(spout, count, secs):
    collector = _Collector()
    spout.open(resolve({Config.TOPOLOGY_MESSAGE_TIMEOUT_SECS: 30}), _Context(), collector)
    deadline = time.monotonic() + secs
    while len(collector.ids) < count and time.monotonic() < deadline:
        spout.next_tuple()
        time.sleep(0.001)
    return collector.ids


def test_a_closed_spout_returns_what_it_emitted_without_an_outcome_at_once(names):
    """Not after ``ack_wait`` (90 s here): the next consumer gets them within seconds."""
    publish(names, [b"a", b"b", b"c"])
    first = NatsJetStreamSpout(URL, names, f"{names}.in.>", "sparkstorm")
    held = _emit_all(first, 3, secs=10)
    assert len(held) == 3
    first.close()  # no ack, no fail: as when a run is aborted
    second = NatsJetStreamSpout(URL, names, f"{names}.in.>", "sparkstorm")
    try:
        assert sorted(_emit_all(second, 3, secs=5)) == sorted(held)
    finally:
        second.close()


def test_a_closed_spout_returns_what_a_fetch_delivered_after_its_deadline(names):
    """A fetch that gives up part-way through a batch (a busy driver starves the client's
    thread) leaves the rest in the client's queue, delivered and unseen; with the buffer
    full, no fetch comes to take them. Close must return those too: in CI, 26 ids of a
    stopped run waited out the 90 s ack wait and the next run ended without them."""
    publish(names, [b"m%d" % i for i in range(300)])
    first = NatsJetStreamSpout(URL, names, f"{names}.in.>", "sparkstorm", fetch=100)
    _emit_all(first, 0, secs=0)
    deadline = time.monotonic() + 10
    while len(first.buffer) < 100 and time.monotonic() < deadline:
        time.sleep(0.01)  # the fetcher fills the buffer, then waits for it to drain

    async def cut_short():  # the fetcher's own call, with a deadline too short to finish
        for _ in range(100):
            with contextlib.suppress(TimeoutError, nats.errors.TimeoutError):
                first.buffer.extend(await first.sub.fetch(50, timeout=0.0002))
            await first.client.flush()
            if first.sub.pending_msgs:
                return first.sub.pending_msgs
        return 0

    stragglers = asyncio.run_coroutine_threadsafe(cut_short(), first.loop).result(30)
    assert stragglers > 0, "no fetch was cut short: the test did not set up its case"
    first.close()
    second = NatsJetStreamSpout(URL, names, f"{names}.in.>", "sparkstorm")
    try:
        assert sorted(_emit_all(second, 300, secs=5)) == list(range(1, 301))
    finally:
        second.close()


def test_a_dead_letter_the_server_did_not_take_is_said_and_tried_again_soon(names, caplog):
    """No stream takes the dead-letter subject: each try is said, and the message comes
    back after nak_delay_secs, not after ack_wait (three message timeouts, 15 s here)."""
    publish(names, [b"poison"])
    topo, conf = topology(
        names, max_retries=1, dead_letter_subject=f"{names}.nowhere", nak_delay_secs=0.1
    )
    result = run_on("local", topo, conf, None, until_idle=False, duration=3.0)
    said = [
        r.getMessage() for r in caplog.records if "the dead letter of message" in r.getMessage()
    ]
    assert len(said) >= 2, said  # said at once, and tried again within the 3 s
    assert result.stats["messages"]["fail_reasons"]["explicit"] >= 3


def test_one_delivery_taken_twice_is_emitted_once():
    """Issue 56, defect 9: fail reasons {'explicit': 3} for a message delivered twice,
    with no dead letter to account for the third. A fetch cut short at its deadline and
    the sweep after it can both hand the spout the same delivery; emitted twice, its two
    tuples failed twice (one nak for the message, one failure counted for nothing). The
    spout's own logic, with a stand-in for nats-py's message (the server is not needed
    to hand over one object twice)."""
    from collections import deque
    from types import SimpleNamespace

    class Emits(list):
        def emit(self, values, msg_id=None):
            self.append((values, msg_id))

    def delivery(sequence, delivered):
        metadata = SimpleNamespace(
            sequence=SimpleNamespace(stream=sequence), num_delivered=delivered
        )
        return SimpleNamespace(metadata=metadata, data=b"poison", subject="s.in.0")

    spout = NatsJetStreamSpout(URL, "s", "s.in.>", "sparkstorm")
    spout.collector, spout.connected, spout.decode = Emits(), True, "utf-8"
    spout.in_flight, spout.emitted = {}, {}
    first = delivery(7, 1)
    spout.buffer = deque([first, first, delivery(7, 2)])
    for _ in range(3):
        spout.next_tuple()
    assert [msg_id for _, msg_id in spout.collector] == [7, 7]  # once, and its redelivery

    # the copy may come after the first one's tree ended (failed: nak-ed, not held)
    spout.collector, spout.in_flight, spout.emitted, spout._back_by = Emits(), {}, {}, 0.0
    spout._send = lambda coroutine: coroutine.close()  # no server: the nak goes nowhere
    first.nak = lambda delay=None: asyncio.sleep(0)
    spout.buffer = deque([first])
    spout.next_tuple()
    spout.fail(7)
    spout.buffer = deque([first, delivery(7, 2)])
    spout.next_tuple()
    spout.next_tuple()
    assert [msg_id for _, msg_id in spout.collector] == [7, 7]  # not the copy of the first
