"""Calls from a topology's tasks back to an object in the driver's process, wherever they run.

A DRPC server (``LocalDRPC``, or a run's own) and ``FeederBatchSpout`` live in the
process that made them, but the tasks that take their requests and batches, and answer
them, may run in a Spark executor. Such an object serves its calls here: in its own
process they are plain method calls; from any other process they travel over a ZeroMQ
socket, as Storm's ``ReturnResults`` reaches its DRPC server.

Who may call: only a process given the address. The socket is a CURVE server on every
address it binds, loopback included, and ZeroMQ's ZAP handler admits only the one client
key this process made for its callers. The address carries the server's public key and
that client's secret key (``tcp://HOST:PORT?curve=HEX&key=HEX``), and it reaches the
tasks only inside their topology (on Spark, over Spark's own RPC). A stranger on the
machine or the network, who has not the key, is refused during the handshake: no frame of
theirs is ever read, let alone unpickled. What an admitted caller sends that is not a
call (a frame too many or too few, bytes that are no pickle) is said in one warning line
and answered with an error; the mailbox serves on.
"""

from __future__ import annotations

import logging
import pickle
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

import zmq
from zmq.utils import z85

from sparkstorm.engines.continuous.security import Gate, RunKeys

Handler = Callable[[Any], Any]

CALL_TIMEOUT_MS = 10_000

LOOPBACK = "127.0.0.1"
CURVE = "?curve="

logger = logging.getLogger(__name__)

_handlers: dict[str, Handler] = {}
_lock = threading.Lock()
_addresses: dict[str, str] = {}
_clients: dict[str, tuple[threading.Lock, zmq.Socket[Any]]] = {}
_context: zmq.Context[Any] | None = None
_keys: RunKeys | None = None
_gate: Gate | None = None


def serve(box: str, handler: Handler, host: str = LOOPBACK) -> str:
    """Serve calls to ``box`` with ``handler``; the address other processes reach it at.

    ``host`` is the address the callers reach this process at: loopback, or the driver's
    address on a cluster of hosts. The address is a secret: whoever has it may call.
    """
    with _lock:
        _handlers[box] = handler
        if host not in _addresses:
            keys = _serving_keys()
            socket = _zmq().socket(zmq.ROUTER)
            keys.serve(socket)
            port = socket.bind_to_random_port(f"tcp://{host}")
            _addresses[host] = (
                f"tcp://{_bracketed(host)}:{port}{CURVE}{z85.decode(keys.server_public).hex()}"
                f"&key={z85.decode(keys.client_secret).hex()}"
            )
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
        ok, answer = pickle.loads(socket.recv())  # from the server the address names
    if not ok:
        raise RuntimeError(answer)
    return answer


def _zmq() -> zmq.Context[Any]:
    global _context
    if _context is None:
        _context = zmq.Context()
    return _context


def _serving_keys() -> RunKeys:
    """The mailbox keys of this process, and its ZAP handler admitting their client (once)."""
    global _keys, _gate
    if _keys is None:
        _keys = RunKeys.new()
        _gate = Gate(_zmq(), _keys)
    return _keys


def _client(address: str) -> tuple[threading.Lock, zmq.Socket[Any]]:
    with _lock:
        client = _clients.get(address)
        if client is None:
            endpoint, _, query = address.partition("?")
            keys = parse_qs(query)
            if "curve" not in keys or "key" not in keys:
                msg = (
                    f"the mailbox address {endpoint} carries no keys: it was made by an "
                    "older sparkstorm; run the topology with this one"
                )
                raise ValueError(msg)
            secret = z85.encode(bytes.fromhex(keys["key"][0]))
            socket = _zmq().socket(zmq.REQ)
            socket.setsockopt(zmq.LINGER, 0)
            socket.curve_secretkey = secret
            socket.curve_publickey = zmq.curve_public(secret)
            socket.curve_serverkey = z85.encode(bytes.fromhex(keys["curve"][0]))
            socket.connect(endpoint)
            client = _clients[address] = (threading.Lock(), socket)
        return client


def _loop(socket: zmq.Socket[Any]) -> None:
    while True:
        frames = socket.recv_multipart()
        try:
            peer, empty, payload = frames
            if empty:
                raise ValueError(empty)  # a REQ's delimiter frame is empty
        except ValueError:
            logger.warning(
                "mailbox: a message of %d frames is no call (a REQ sends the call in one "
                "frame); dropped",
                len(frames) - 1,  # the first is the peer's id, put there by the ROUTER
            )
            continue
        socket.send_multipart([peer, b"", pickle.dumps(_answer(payload), protocol=5)])


def _answer(payload: bytes) -> tuple[bool, Any]:
    """The reply to one call: (True, the handler's answer) or (False, what went wrong)."""
    try:
        box, request = pickle.loads(payload)  # an admitted caller's: ZAP checked its key
    except Exception as exc:
        logger.warning("mailbox: a call that is no (box, request) pickle: %s; refused", exc)
        return False, f"the call is no (box, request) pickle: {type(exc).__name__}"
    handler = _handlers.get(box)
    try:
        if handler is None:
            msg = f"nothing serves {box!r} here any more"
            raise LookupError(msg)
        return True, handler(request)
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host
