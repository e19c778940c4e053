"""Who may talk to a run's sockets: ZeroMQ's CURVE, with keys made for the run.

The driver makes two key pairs per run: the *server* pair, with which every worker's
receiving socket and the driver's control socket accept connections, and the *client*
pair, with which every worker connects. Both travel to the workers inside their set-up
(on Spark, in the barrier stage's task, over Spark's own RPC). A :class:`Gate` (ZeroMQ's
ZAP handler) admits a connection only when it proves it holds the run's client secret
key, so a process that is not one of the run's workers can neither send tuples or
commands nor read them: every frame is encrypted and authenticated (CurveZMQ).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import zmq
from zmq.auth.thread import ThreadAuthenticator


@dataclass(frozen=True)
class RunKeys:
    """The run's two CURVE key pairs (Z85-encoded, as ZeroMQ takes them)."""

    server_public: bytes
    server_secret: bytes
    client_public: bytes
    client_secret: bytes

    @classmethod
    def new(cls) -> RunKeys:
        """Fresh key pairs for one run."""
        server_public, server_secret = zmq.curve_keypair()
        client_public, client_secret = zmq.curve_keypair()
        return cls(server_public, server_secret, client_public, client_secret)

    def serve(self, socket: zmq.Socket[Any]) -> None:
        """Make ``socket`` (before it binds) accept only CURVE connections."""
        socket.curve_secretkey = self.server_secret
        socket.curve_publickey = self.server_public
        socket.curve_server = True

    def join(self, socket: zmq.Socket[Any]) -> None:
        """Make ``socket`` (before it connects) connect as one of the run's workers."""
        socket.curve_secretkey = self.client_secret
        socket.curve_publickey = self.client_public
        socket.curve_serverkey = self.server_public


class Gate:
    """Admits, on ``context``'s serving sockets, only clients holding the run's client key."""

    def __init__(self, context: zmq.Context[Any], keys: RunKeys) -> None:
        self._only = _Only(keys.client_public)
        self._authenticator = ThreadAuthenticator(context)
        self._authenticator.start()
        self._authenticator.configure_curve_callback("*", credentials_provider=self._only)

    @property
    def refused(self) -> int:
        """Connections refused so far."""
        return self._only.refused

    def close(self) -> None:
        """Stop the ZAP handler (before the context terminates)."""
        self._authenticator.stop()


@dataclass
class _Only:
    """The ZAP handler's check: the client's public key (Z85) is the run's."""

    client_public: bytes
    refused: int = 0

    def callback(self, domain: str, key: bytes) -> bool:
        if key == self.client_public:
            return True
        self.refused += 1
        return False
