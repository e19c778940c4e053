"""The mailbox: who may call the driver's process, on loopback and on a cluster's address.

127.0.0.2 stands for the driver's cluster address. The callers are other processes, as a
task in an executor is; the strangers are sockets of their own, as a local user's or a
process on the network's would be.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import zmq
from zmq.utils import z85

from sparkstorm.control import mailbox
from sparkstorm.control.api_views import shown_configuration
from sparkstorm.control.drpc import DRPCServer
from sparkstorm.engines import driver_address

CLUSTER_ADDRESS = "127.0.0.2"
WHERE = [mailbox.LOOPBACK, CLUSTER_ADDRESS]


def call_from_another_process(address: str, box: str, request: str) -> str:
    code = (
        "import sys; from sparkstorm.control import mailbox; "
        "print(mailbox.call(sys.argv[1], sys.argv[2], sys.argv[3]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, address, box, request],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_a_box_served_off_loopback_answers_other_processes_over_curve():
    box = uuid.uuid4().hex
    address = mailbox.serve(box, lambda request: f"answered {request}", CLUSTER_ADDRESS)
    try:
        endpoint, _, key = address.partition(mailbox.CURVE)
        assert endpoint.startswith(f"tcp://{CLUSTER_ADDRESS}:")
        server, _, client = key.partition("&key=")
        assert len(bytes.fromhex(server)) == 32  # the socket's public key travels in the address
        assert len(bytes.fromhex(client)) == 32  # and the only client key it admits
        assert call_from_another_process(address, box, "hello") == "answered hello"
    finally:
        mailbox.forget(box)


class _RunsCode:
    """A pickle that, unpickled, creates a file: what a stranger sends to run code."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (os.mknod, (str(self.path),))


def _stranger(endpoint: str, how: str, server_public: bytes | None = None) -> zmq.Socket:
    socket = zmq.Context.instance().socket(zmq.REQ)
    socket.setsockopt(zmq.LINGER, 0)
    # A refused handshake drops the connection; a send with no connection blocks for
    # ever (it hung a suite run): it gives up after 2 s instead.
    socket.setsockopt(zmq.SNDTIMEO, 2000)
    if how == "with a guessed server key":
        socket.curve_publickey, socket.curve_secretkey = zmq.curve_keypair()
        socket.curve_serverkey = zmq.curve_keypair()[0]
    elif how == "with the server key but a client key of its own":
        socket.curve_publickey, socket.curve_secretkey = zmq.curve_keypair()
        socket.curve_serverkey = server_public
    socket.connect(endpoint)
    return socket


@pytest.mark.parametrize("host", WHERE)
@pytest.mark.parametrize(
    "how",
    [
        "in the clear",
        "with a guessed server key",
        "with the server key but a client key of its own",
    ],
)
def test_a_stranger_runs_no_code_and_gets_no_answer(how, host, tmp_path):
    """Issue 54, defect 1: a pickle sent to the mailbox ran code in the driver."""
    box = uuid.uuid4().hex
    calls: list[object] = []
    address = mailbox.serve(box, calls.append, host)
    endpoint, _, query = address.partition("?")
    server_public = z85.encode(bytes.fromhex(query.split("&")[0].removeprefix("curve=")))
    planted = tmp_path / "ran"
    socket = _stranger(endpoint, how, server_public)
    try:
        with contextlib.suppress(zmq.Again):  # not even sent: the handshake was refused
            socket.send(pickle.dumps((box, _RunsCode(planted))))
        assert not socket.poll(1500), "a caller without the address's key was answered"
        assert not planted.exists(), "a stranger's pickle was loaded"
        assert calls == []
        assert call_from_another_process(address, box, "still there") == "None"
        assert calls == ["still there"]
    finally:
        socket.close()
        mailbox.forget(box)


@pytest.mark.parametrize("host", WHERE)
def test_a_malformed_message_from_an_admitted_caller_is_said_and_the_mailbox_serves_on(
    host, caplog
):
    """A 2-frame DEALER message, or bytes that are no pickle, killed the mailbox's thread."""
    box = uuid.uuid4().hex
    address = mailbox.serve(box, lambda request: f"answered {request}", host)
    endpoint, _, query = address.partition("?")
    keys = dict(part.split("=") for part in query.split("&"))
    secret = z85.encode(bytes.fromhex(keys["key"]))
    sockets = []
    try:
        with caplog.at_level(logging.WARNING, logger="sparkstorm.control.mailbox"):
            for kind in (zmq.DEALER, zmq.REQ):
                socket = zmq.Context.instance().socket(kind)
                sockets.append(socket)
                socket.setsockopt(zmq.LINGER, 0)
                socket.curve_secretkey, socket.curve_publickey = secret, zmq.curve_public(secret)
                socket.curve_serverkey = z85.encode(bytes.fromhex(keys["curve"]))
                socket.connect(endpoint)
            dealer, req = sockets
            dealer.send_multipart([b"junk", b"more junk"])
            deadline = time.monotonic() + 5  # said first: two connections keep no order
            while not caplog.records and time.monotonic() < deadline:
                time.sleep(0.01)
            req.send(b"\x80\x05no pickle at all")
            assert req.poll(5000), "the mailbox did not answer a call it could not read"
            ok, why = pickle.loads(req.recv())
            assert not ok and "no (box, request) pickle" in why
            assert call_from_another_process(address, box, "hello") == "answered hello"
            deadline = time.monotonic() + 5
            while len(caplog.records) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == 2, lines
        assert "2 frames is no call" in lines[0] and "no (box, request) pickle" in lines[1]
    finally:
        for socket in sockets:
            socket.close()
        mailbox.forget(box)


def test_a_drpc_server_on_a_cluster_address_is_shown_without_its_key_and_box():
    server = DRPCServer(["words"], CLUSTER_ADDRESS)
    try:
        assert server.box in server.url and "?curve=" in server.url
        shown = shown_configuration({"sparkstorm.drpc.server": server.url})
        endpoint = server.url.partition("?")[0]
        assert shown == {"sparkstorm.drpc.server": f"{endpoint}/***"}
    finally:
        server.close()


def test_the_driver_address_is_loopback_on_one_machine_and_the_drivers_host_on_a_cluster():
    assert driver_address("local", {"spark.driver.host": "10.1.2.3"}, None, None) == "127.0.0.1"
    assert driver_address("spark", {}, None, None) == "127.0.0.1"  # local[*]
    assert driver_address("spark", {}, None, "local-cluster[2,1,512]") == "127.0.0.1"
    on_cluster = {"spark.driver.host": "10.1.2.3"}
    assert driver_address("spark", on_cluster, None, "spark://master:7077") == "10.1.2.3"
    assert driver_address("spark", {}, None, "spark://master:7077") not in ("", "127.0.0.1")
