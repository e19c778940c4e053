"""Calls from a topology's tasks back to an object in the driver's process, wherever they run.

A DRPC server (``LocalDRPC``, or a run's own) and ``FeederBatchSpout`` live in the
process that made them, but the tasks that take their requests and batches, and answer
them, may run in a Spark executor. Such an object serves its calls here: in its own
process they are plain method calls; from any other process they travel over a ZeroMQ
socket on loopback, as Storm's ``ReturnResults`` reaches its DRPC server.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Callable
from typing import Any

import zmq

Handler = Callable[[Any], Any]

CALL_TIMEOUT_MS = 10_000

_handlers: dict[str, Handler] = {}
_lock = threading.Lock()
_address: str | None = None
_clients: dict[str, tuple[threading.Lock, zmq.Socket[Any]]] = {}
_context: zmq.Context[Any] | None = None


def serve(box: str, handler: Handler) -> str:
    """Serve calls to ``box`` with ``handler``; the address other processes reach it at."""
    global _address
    with _lock:
        _handlers[box] = handler
        if _address is None:
            socket = _zmq().socket(zmq.ROUTER)
            port = socket.bind_to_random_port("tcp://127.0.0.1")
            _address = f"tcp://127.0.0.1:{port}"
            threading.Thread(
                target=_loop, args=(socket,), name="sparkstorm-mailbox", daemon=True
            ).start()
        return _address


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
            msg = f"the test's process did not answer at {address} within {CALL_TIMEOUT_MS} ms"
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
            socket.connect(address)
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
