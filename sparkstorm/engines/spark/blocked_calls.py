"""Blocked calls in Spark executors, reported to the driver while they block.

A bolt's ``execute`` runs in a Spark Python worker. One that blocks holds its
superstep, and with it the whole topology, and all the driver would see is a long
job. So each Python worker watches its own calls (``tasks/watchdog.py``), and when
one has made no progress for ``sparkstorm.watchdog.secs`` it sends one JSON line to a
listener the driver runs for the run: which call, in which process, and where the
user's code is. Executors can always reach the driver (Spark's own RPC needs it), so
the listener binds to the address Spark's driver binds to.
"""

from __future__ import annotations

import json
import logging
import socket
import socketserver
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass

log = logging.getLogger(__name__)

MAX_REPORT_BYTES = 64 * 1024
SEND_TIMEOUT_SECS = 2.0
STOP_POLL_SECS = 0.05
"""How often the listener looks for a stop: ``close`` waits up to this (socketserver's
default, 0.5 s, was half a second added to the end of every superstep run)."""


@dataclass(frozen=True)
class BlockedCall:
    """One call that has not returned in a Spark executor."""

    run_id: str
    call: str
    """``execute() of bolt 'name' task 3``."""
    secs: float
    host: str
    pid: int
    stack: str
    """Where the user's code is now (sparkstorm's and pyspark's frames left out)."""


class BlockedCallListener:
    """A TCP listener on the driver, calling ``on_report`` for each report of its run."""

    def __init__(self, host: str, run_id: str, on_report: Callable[[BlockedCall], None]) -> None:
        class Handler(socketserver.StreamRequestHandler):
            timeout = SEND_TIMEOUT_SECS

            def handle(self) -> None:
                line = self.rfile.readline(MAX_REPORT_BYTES)
                try:
                    report = BlockedCall(**json.loads(line))
                except (ValueError, TypeError) as exc:  # not ours: drop it
                    log.debug("a malformed report from %s: %s", self.client_address, exc)
                    return
                if report.run_id == run_id:
                    on_report(report)

        self._server = socketserver.ThreadingTCPServer((host, 0), Handler)
        self._server.daemon_threads = True
        self.address: tuple[str, int] = self._server.server_address[:2]  # type: ignore[assignment]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            args=(STOP_POLL_SECS,),
            name="sparkstorm-blocked-calls",
            daemon=True,
        )
        self._thread.start()

    def close(self) -> None:
        """Stop listening."""
        self._server.shutdown()
        self._server.server_close()


def send_report(address: tuple[str, int], report: BlockedCall) -> None:
    """Send ``report`` to the driver's listener (raises ``OSError`` if it cannot)."""
    with socket.create_connection(address, timeout=SEND_TIMEOUT_SECS) as conn:
        conn.sendall(json.dumps(asdict(report)).encode() + b"\n")
