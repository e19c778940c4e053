"""Calls from a topology's tasks back to an object in the driver's process, wherever they run.

A DRPC server (``LocalDRPC``, or a run's own) and ``FeederBatchSpout`` live in the
process that made them, but the tasks that take their requests and batches, and answer
them, may run in a Spark executor. Such an object serves its calls here: in its own
process they are plain method calls; from any other process they travel over a ZeroMQ
socket, as Storm's ``ReturnResults`` reaches its DRPC server.

The socket listens on loopback unless the object serves the tasks of a cluster of hosts:
then on the driver's cluster address, encrypted with CURVE. Its address carries the
socket's public key (``tcp://HOST:PORT?curve=HEX``), so only a caller that was given the
address can reach it, and nobody on the network reads or forges a call; a box's name is
a random 128-bit id that only the topology's tasks are given, which is what a call must
name to be served.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Callable
from typing import Any

import zmq
from zmq.utils import z85

Handler = Callable[[Any], Any]

CALL_TIMEOUT_MS = 10_000

LOOPBACK = "127.0.0.1"
CURVE = "?curve="

_handlers: dict[str, Handler] = {}
_lock = threading.Lock()
_addresses: dict[str, str] = {}
_clients: dict[str, tuple[threading.Lock, zmq.Socket[Any]]] = {}
_context: zmq.Context[Any] | None = None


def serve(box: str, handler: Handler, host: str = LOOPBACK) -> str:
    """Serve calls to ``box`` with ``handler``; the address other processes reach it at.

    ``host`` is the address the callers reach this process at: loopback, or the driver's
    address on a cluster of hosts (a CURVE socket there).
    """
    with _lock:
        _handlers[box] = handler
        if host not in _addresses:
            socket = _zmq().socket(zmq.ROUTER)
            key = b""
            if host != LOOPBACK:
                public, secret = zmq.curve_keypair()
                socket.curve_secretkey, socket.curve_publickey = secret, public
                socket.curve_server = True
                key = z85.decode(public)
            port = socket.bind_to_random_port(f"tcp://{host}")
            address = f"tcp://{_bracketed(host)}:{port}"
            _addresses[host] = f"{address}{CURVE}{key.hex()}" if key else address
            threading.Thread(
                target=_loop, args=(socket,), name=f"sparkstorm-mailbox-{host}", daemon=True
            ).start()
        return _addresses[host]


def forget(box: str) -> None:
    """Stop serving ``box``."""
    with _lock:
        _handlers.pop(box, None)


def call(address: str, box: str, request: Any) -> Any:
    """``box``'s handler's answer to ``request``: in this process, or over the socket."""
    handler = _handlers.get(box)
    if handler is not None:
        return handler(request)
    lock, socket = _client(address)
    with lock:
        socket.send(pickle.dumps((box, request), protocol=5))
        if not socket.poll(CALL_TIMEOUT_MS):
            _clients.pop(address, None)
            socket.close(linger=0)
            where = address.partition(CURVE)[0]
            msg = f"the driver's process did not answer at {where} within {CALL_TIMEOUT_MS} ms"
            raise TimeoutError(msg)
        ok, answer = pickle.loads(socket.recv())
    if not ok:
        raise RuntimeError(answer)
    return answer


def _zmq() -> zmq.Context[Any]:
    global _context
    if _context is None:
        _context = zmq.Context()
    return _context


def _client(address: str) -> tuple[threading.Lock, zmq.Socket[Any]]:
    with _lock:
        client = _clients.get(address)
        if client is None:
            socket = _zmq().socket(zmq.REQ)
            socket.setsockopt(zmq.LINGER, 0)
            endpoint, _, key = address.partition(CURVE)
            if key:  # any client key: the server's key in the address is the secret
                socket.curve_publickey, socket.curve_secretkey = zmq.curve_keypair()
                socket.curve_serverkey = z85.encode(bytes.fromhex(key))
            socket.connect(endpoint)
            client = _clients[address] = (threading.Lock(), socket)
        return client


def _loop(socket: zmq.Socket[Any]) -> None:
    while True:
        peer, empty, payload = socket.recv_multipart()
        box, request = pickle.loads(payload)
        handler = _handlers.get(box)
        try:
            if handler is None:
                msg = f"nothing serves {box!r} here any more"
                raise LookupError(msg)
            reply = (True, handler(request))
        except Exception as exc:
            reply = (False, f"{type(exc).__name__}: {exc}")
        socket.send_multipart([peer, empty, pickle.dumps(reply, protocol=5)])


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host
