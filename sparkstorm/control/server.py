"""Serve a topology's API from a thread of the driver (uvicorn), and register it.

Loopback by default: binding another address is a choice the user makes with
``sparkstorm.ui.host``, and then the control routes need the token.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time

import uvicorn

from sparkstorm.control import registry
from sparkstorm.control.api import build_app
from sparkstorm.control.api_model import Control
from sparkstorm.tasks.cpu_profile import CpuProfile
from sparkstorm.tasks.log_levels import LogLevels


def is_loopback(host: str) -> bool:
    """Whether ``host`` resolves to a loopback address."""
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


class ControlServer:
    """The API of one running topology, on ``host:port`` (port 0: any free one)."""

    def __init__(self, control: Control, host: str, port: int) -> None:
        self.control = control
        self.sock = socket.create_server((host, port))  # bound now: a taken port fails here
        bound_host, bound_port = self.sock.getsockname()[:2]
        wildcard = bound_host in ("0.0.0.0", "::")
        self.url = f"http://{'127.0.0.1' if wildcard else bound_host}:{bound_port}"
        """Where this machine's verbs reach the API."""
        self.shown_url = f"http://{socket.gethostname()}:{bound_port}" if wildcard else self.url
        """Where the start line sends people: every address, so the machine's name."""
        config = uvicorn.Config(build_app(control), log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
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
