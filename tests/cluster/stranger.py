"""A process that is not one of a run's workers knocks on one of its sockets.

Run on a host of its own (``python -m tests.cluster.stranger tcp://ADDRESS:PORT``): it
connects twice, once in the clear and once with CURVE keys of its own, sends a frame
each time, and prints as JSON what ZeroMQ's monitor said about each connection.
"""

from __future__ import annotations

import json
import sys
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

SETTLED = {"HANDSHAKE_SUCCEEDED", "HANDSHAKE_FAILED_PROTOCOL", "HANDSHAKE_FAILED_NO_DETAIL"}
"""Events that say how the handshake went: the knock ends at the first of them."""


def knock(address: str, curve: bool, secs: float = 3.0) -> list[str]:
    """The monitor's events, by name, for one connection to ``address``, until the first
    that settles its handshake (or ``secs``)."""
    context = zmq.Context.instance()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    if curve:
        socket.curve_publickey, socket.curve_secretkey = zmq.curve_keypair()
        socket.curve_serverkey = zmq.curve_keypair()[0]  # a guess: the run's is not known
    monitor = socket.get_monitor_socket()
    socket.connect(address)
    socket.send(b"a frame from a stranger")
    events: list[str] = []
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline and not SETTLED & set(events):
        if monitor.poll(100):
            events.append(zmq.Event(recv_monitor_message(monitor)["event"]).name)
    socket.disable_monitor()
    monitor.close()
    socket.close()
    return events


if __name__ == "__main__":
    target = sys.argv[1]
    print(json.dumps({"plain": knock(target, False), "curve": knock(target, True)}))
