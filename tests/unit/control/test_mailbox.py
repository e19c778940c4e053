"""The mailbox off loopback: what a DRPC server on a cluster's address gives its tasks.

127.0.0.2 stands for the driver's cluster address: any address but 127.0.0.1 takes the
CURVE socket. The callers are other processes, as a task in an executor is.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import uuid

import pytest
import zmq

from sparkstorm.control import mailbox
from sparkstorm.control.api_views import shown_configuration
from sparkstorm.control.drpc import DRPCServer
from sparkstorm.engines import driver_address

CLUSTER_ADDRESS = "127.0.0.2"


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
        assert len(bytes.fromhex(key)) == 32  # the socket's public key travels in the address
        assert call_from_another_process(address, box, "hello") == "answered hello"
    finally:
        mailbox.forget(box)


@pytest.mark.parametrize("how", ["in the clear", "with a guessed server key"])
def test_a_caller_without_the_addresss_key_gets_nothing_from_a_box_off_loopback(how):
    box = uuid.uuid4().hex
    calls: list[object] = []
    address = mailbox.serve(box, calls.append, CLUSTER_ADDRESS)
    endpoint = address.partition(mailbox.CURVE)[0]
    socket = zmq.Context.instance().socket(zmq.REQ)
    socket.setsockopt(zmq.LINGER, 0)
    if how != "in the clear":
        socket.curve_publickey, socket.curve_secretkey = zmq.curve_keypair()
        socket.curve_serverkey = zmq.curve_keypair()[0]
    try:
        socket.connect(endpoint)
        socket.send(pickle.dumps((box, "let me in")))
        assert not socket.poll(1500), "a caller without the key was answered"
        assert calls == []
    finally:
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
