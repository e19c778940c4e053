"""The continuous mode's sockets admit the run's workers only (CURVE, keys made per run)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import zmq

from sparkstorm.engines.continuous.security import Gate, RunKeys


@pytest.fixture
def served() -> Iterator[tuple[zmq.Context[Any], zmq.Socket[Any], str, RunKeys, Gate]]:
    """A PULL socket served with a run's keys behind its gate, and its address."""
    context: zmq.Context[Any] = zmq.Context()
    keys = RunKeys.new()
    gate = Gate(context, keys)
    receiver = context.socket(zmq.PULL)
    keys.serve(receiver)
    port = receiver.bind_to_random_port("tcp://127.0.0.1")
    yield context, receiver, f"tcp://127.0.0.1:{port}", keys, gate
    receiver.close(linger=0)
    gate.close()
    context.term()


def sender(context: zmq.Context[Any], address: str, keys: RunKeys | None) -> zmq.Socket[Any]:
    socket = context.socket(zmq.PUSH)
    socket.setsockopt(zmq.LINGER, 0)
    if keys is not None:
        keys.join(socket)
    socket.connect(address)
    return socket


def received(receiver: zmq.Socket[Any], secs: float = 1.0) -> list[bytes]:
    got, deadline = [], time.monotonic() + secs
    while time.monotonic() < deadline:
        if receiver.poll(50):
            got.append(receiver.recv())
    return got


def test_the_runs_worker_key_gets_through(served):
    context, receiver, address, keys, gate = served
    with sender(context, address, keys) as push:
        push.send(b"tuples")
        assert received(receiver) == [b"tuples"]
    assert gate.refused == 0


def test_a_peer_with_another_key_or_none_is_refused(served):
    context, receiver, address, keys, gate = served
    stranger = RunKeys.new()  # knows the server's public key, holds another client key
    knows_server = RunKeys(keys.server_public, b"", stranger.client_public, stranger.client_secret)
    with sender(context, address, knows_server) as push, sender(context, address, None) as plain:
        push.send(b"forged", zmq.NOBLOCK)
        plain.send(b"plain", zmq.NOBLOCK)
        assert received(receiver) == []
    assert gate.refused >= 1  # the plain one fails the handshake before the gate
