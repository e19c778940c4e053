"""Serve a topology's API from a thread of the driver (uvicorn), and register it.

Loopback by default: binding another address is a choice the user makes with
``sparkstorm.ui.host``, and then the control routes need the token.

Whoever reaches the port may still hold the server's resources, so connections are
capped: other users' together at :data:`MAX_CONNECTIONS`, each other user (or remote
address) at :data:`MAX_PER_PEER`, and the run's own user apart, at
:data:`MAX_CONNECTIONS` of its own (``peers.py`` names a loopback peer's user), so the
owner's verbs and page get in whatever others hold. More are closed at once, said in
one line. A connection that has not sent its request's headers within
:data:`HEADER_SECS` is closed, a body not in within ``api_guard.BODY_SECS`` is answered
408, and a refused accept (no file descriptor left) is said once, not once per attempt.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import socket
import threading
import time
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from sparkstorm.control import registry
from sparkstorm.control.api import build_app
from sparkstorm.control.api_guard import Guard
from sparkstorm.control.api_model import Control
from sparkstorm.control.peers import peer_key
from sparkstorm.tasks.cpu_profile import CpuProfile
from sparkstorm.tasks.log_levels import LogLevels

MAX_CONNECTIONS = 256
"""Connections the API holds at once for other users together, and apart for its own."""

MAX_PER_PEER = 64
"""Connections one other local user (or one remote address) may hold at once."""

OWNER = f"uid:{os.getuid()}"
"""The peer key of the run's own user (see ``peers.peer_key``)."""

HEADER_SECS = 10.0
"""How long a connection may take to send its request's headers."""

logger = logging.getLogger(__name__)


class _GuardedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with caps on connections and on the headers' time."""

    refused = 0
    """Connections closed for a cap, by this process's servers."""

    peer = OWNER

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.peer = peer_key(transport.get_extra_info("socket"))
        if self._over_cap():
            if _GuardedH11.refused == 0:
                logger.warning(
                    "the REST API holds %d connections of other users (or %d of one), its "
                    "most: further ones are closed as they come; its own user's still get "
                    "in (said once)",
                    MAX_CONNECTIONS,
                    MAX_PER_PEER,
                )
            _GuardedH11.refused += 1
            transport.abort()
            return
        self.loop.call_later(HEADER_SECS, self._headers_due)

    def _over_cap(self) -> bool:
        held = [c.peer for c in self.connections if c is not self and isinstance(c, _GuardedH11)]
        if self.peer == OWNER:
            return held.count(OWNER) >= MAX_CONNECTIONS
        others = len(held) - held.count(OWNER)
        return others >= MAX_CONNECTIONS or held.count(self.peer) >= MAX_PER_PEER

    def _headers_due(self) -> None:
        if self.cycle is None and not self.transport.is_closing():  # no request begun
            self.transport.close()


class _RefusedAccepts:
    """The loop's exception handler: a refused accept is said once, then counted."""

    count = 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if "accept" not in str(context.get("message", "")):
            loop.default_exception_handler(context)
            return
        self.count += 1
        if self.count == 1:
            logger.warning(
                "the REST API could not accept a connection: %s (%s); said once",
                context.get("message"),
                context.get("exception"),
            )


class _Server(uvicorn.Server):
    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        asyncio.get_running_loop().set_exception_handler(_RefusedAccepts())
        await super().serve(sockets)


def served_hosts(bound: str, configured: str, extra: list[str]) -> list[str]:
    """The names ``Host`` may give for an API bound to ``bound`` (see ``api_guard``)."""
    names = [bound, configured, *extra]
    if bound in ("0.0.0.0", "::") or not is_loopback(bound):
        names += [socket.gethostname(), socket.getfqdn()]
    return names


def is_loopback(host: str) -> bool:
    """Whether ``host`` resolves to a loopback address."""
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


class ControlServer:
    """The API of one running topology, on ``host:port`` (port 0: any free one)."""

    def __init__(
        self, control: Control, host: str, port: int, hosts: list[str] | None = None
    ) -> None:
        self.control = control
        self.sock = socket.create_server((host, port))  # bound now: a taken port fails here
        bound_host, bound_port = self.sock.getsockname()[:2]
        wildcard = bound_host in ("0.0.0.0", "::")
        self.url = f"http://{'127.0.0.1' if wildcard else bound_host}:{bound_port}"
        """Where this machine's verbs reach the API."""
        self.shown_url = f"http://{socket.gethostname()}:{bound_port}" if wildcard else self.url
        """Where the start line sends people: every address, so the machine's name."""
        app = Guard(
            build_app(control),
            served_hosts(bound_host, host, hosts or []),
            None if control.loopback else control.token,
        )
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="off",
            http=_GuardedH11,
            timeout_keep_alive=5,
            h11_max_incomplete_event_size=64 * 1024,
        )
        self.server = _Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.driver_profile: CpuProfile | None = None
        """A CPU profile of the driver's loop under way (the loop's thread runs it)."""
        self.profiles: dict[str, tuple[float, str]] = {}
        """The driver's latest CPU profile, under ``driver``: when, text."""
        self.log_levels = LogLevels()
        """The driver's loggers an operator set for a while (the loop puts them back)."""

    def start(self) -> None:
        """Serve from a daemon thread; register once the server answers."""
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        registry.register(self.control.name, self.url, self.control.token)

    def stop(self) -> None:
        """Unregister and stop serving."""
        registry.unregister(self.control.name)
        self.server.should_exit = True
        self.thread.join(5)
        self.sock.close()
