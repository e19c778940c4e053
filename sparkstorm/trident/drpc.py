"""DRPC: a function call answered by a running Trident topology (Storm's ``LocalDRPC``).

A request is one batch of one tuple, ``[args]``, through the function's stream; the
answer is the JSON list of the tuples its stream ends with. Requests travel to the
topology's coordinator and answers back through this process's registry of servers.
"""

from __future__ import annotations

import itertools
import json
import threading
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from sparkstorm.errors import SparkStormError
from sparkstorm.trident import driving, mailbox


class DRPCExecutionError(SparkStormError):
    """A DRPC request failed in the topology (Storm's ``DRPCExecutionException``).

    .. versionadded:: 0.3.0
    """


@dataclass
class _Server:
    requests: dict[str, deque[tuple[int, str]]] = field(default_factory=dict)
    answers: dict[int, tuple[bool, str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_SERVERS: dict[str, _Server] = {}
_REQUEST_IDS = itertools.count(1)


class LocalDRPC:
    """A DRPC server in this process, for tests: ``execute(function, args)`` -> JSON.

    Examples
    --------
    >>> drpc = LocalDRPC()
    >>> # topology.new_drpc_stream("words", drpc)...; then, with it running:
    >>> # drpc.execute("words", "the man")  ->  '[[3]]'

    .. versionadded:: 0.3.0
    """

    def __init__(self) -> None:
        self.server_id = uuid.uuid4().hex
        _SERVERS[self.server_id] = _Server()
        self.address = mailbox.serve(self.server_id, self._serve)

    @property
    def _server(self) -> _Server:
        return _SERVERS.setdefault(self.server_id, _Server())

    def execute(self, function: str, args: str, timeout: float | None = None) -> str:
        """Run ``function`` on ``args`` in the topology; its result tuples as a JSON list."""
        server = self._server
        request = next(_REQUEST_IDS)
        with server.lock:
            server.requests.setdefault(function, deque()).append((request, args))
        driving.run_until(lambda: request in server.answers, timeout, f"DRPC {function}({args!r})")
        with server.lock:
            ok, text = server.answers.pop(request)
        if not ok:
            msg = f"DRPC {function}({args!r}) failed: {text}"
            raise DRPCExecutionError(msg)
        return text

    # -- the topology's side: calls that may come from another process -------------------
    def take(self, function: str) -> list[tuple[int, str]]:
        """The requests for ``function`` waiting (the coordinator takes them)."""
        return mailbox.call(self.address, self.server_id, ("take", function))  # type: ignore[no-any-return]

    def respond(self, request: int, rows: list[list[Any]]) -> None:
        """Answer ``request`` with its result tuples."""
        mailbox.call(self.address, self.server_id, ("respond", request, rows))

    def fail(self, request: int, reason: str) -> None:
        """Answer ``request`` with a failure."""
        mailbox.call(self.address, self.server_id, ("fail", request, reason))

    def _serve(self, call: tuple[Any, ...]) -> Any:
        server = self._server
        with server.lock:
            if call[0] == "take":
                queue = server.requests.get(call[1])
                taken = list(queue or ())
                if queue:
                    queue.clear()
                return taken
            if call[0] == "respond":
                server.answers[call[1]] = (True, json.dumps(call[2], default=str))
            else:
                server.answers.setdefault(call[1], (False, call[2]))
            return None

    def shutdown(self) -> None:
        """Forget this server's requests."""
        _SERVERS.pop(self.server_id, None)
        mailbox.forget(self.server_id)

    def __enter__(self) -> LocalDRPC:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
