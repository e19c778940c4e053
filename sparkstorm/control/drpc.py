"""DRPC servers: function calls answered by a running topology (Storm's DRPC server).

A request waits here, in the process that took it, until the topology's coordinator
takes it; the topology answers with the JSON list of the tuples the function's stream
ends with. The tasks reach the server through ``mailbox``, wherever they run, so the
same server works for the local engine, the superstep mode and the continuous mode, on
one machine (loopback) or across the hosts of a cluster (the driver's address, CURVE).

A test makes its own (``sparkstorm.trident.LocalDRPC``). ``sparkstorm.run`` makes one
for a topology whose DRPC functions were given none, as Storm's topologies use the
cluster's DRPC servers: its REST API and ``sparkstorm drpc`` call it, and its address
reaches the tasks in ``sparkstorm.drpc.server``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable
from typing import Any

from sparkstorm.config import SPARKSTORM_DRPC_FUNCTIONS
from sparkstorm.control import mailbox
from sparkstorm.errors import DRPCExecutionError
from sparkstorm.topology.builder import Topology

_REQUEST_IDS = itertools.count(1)
ANSWER_POLL_SECS = 0.002
"""How often an event loop's caller looks for its answer (the coordinator asks every 2 ms)."""


def drpc_functions(topology: Topology) -> list[str]:
    """The DRPC functions ``topology`` serves through the run's server (none of their own)."""
    return [f for spec in topology.spouts for f in spec.conf.get(SPARKSTORM_DRPC_FUNCTIONS, ())]


class DRPCClient:
    """A task's handle on a DRPC server in another process (``sparkstorm.drpc.server``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        """Where the topology's tasks reach the server (``sparkstorm.drpc.server``)."""
        self.address, _, self.box = url.rpartition("/")

    def take(self, function: str) -> list[tuple[int, str]]:
        """The requests for ``function`` waiting (the coordinator takes them)."""
        return mailbox.call(self.address, self.box, ("take", function))  # type: ignore[no-any-return]

    def respond(self, request: int, rows: list[list[Any]]) -> None:
        """Answer ``request`` with its result tuples."""
        mailbox.call(self.address, self.box, ("respond", request, rows))

    def fail(self, request: int, reason: str) -> None:
        """Answer ``request`` with a failure."""
        mailbox.call(self.address, self.box, ("fail", request, reason))


class DRPCServer(DRPCClient):
    """Requests for DRPC functions, waiting for the topology, and the answers it gave.

    ``execute`` is the caller's side; ``take``, ``respond`` and ``fail`` are the
    topology's. Pickled into a topology, a server travels as its :class:`DRPCClient`.
    """

    def __init__(self, functions: Iterable[str] = (), host: str = mailbox.LOOPBACK) -> None:
        self.box = uuid.uuid4().hex
        self.functions = set(functions)
        """The functions a caller may ask for; empty: any."""
        self._requests: dict[str, deque[tuple[int, str]]] = {}
        self._answers: dict[int, tuple[bool, str]] = {}
        self._waiting: set[int] = set()
        self._changed = threading.Condition()
        self._closed: str | None = None
        super().__init__(f"{mailbox.serve(self.box, self._serve, host)}/{self.box}")

    def execute(self, function: str, args: str, timeout: float | None = None) -> str:
        """Run ``function`` on ``args`` in the topology; its result tuples as a JSON list."""
        request = self.submit(function, args)
        self.wait(request, timeout, f"DRPC {function}({args!r})")
        return self.result(request, function, args)

    @property
    def waiting(self) -> int:
        """Requests submitted and not answered yet."""
        return len(self._waiting)

    async def answer(self, function: str, args: str, timeout: float) -> str:
        """:meth:`execute` for an event loop: waits without holding a thread."""
        request = self.submit(function, args)
        deadline = time.monotonic() + timeout
        while not self.answered(request):
            if time.monotonic() >= deadline:
                with self._changed:
                    self._forget(request)
                msg = f"DRPC {function}({args!r}) was not answered within {timeout} s"
                raise TimeoutError(msg)
            await asyncio.sleep(ANSWER_POLL_SECS)
        return self.result(request, function, args)

    def submit(self, function: str, args: str) -> int:
        """Queue a request for the topology; its id."""
        if self.functions and function not in self.functions:
            known = ", ".join(sorted(self.functions))
            msg = f"no DRPC function {function!r} in this topology; it serves {known}"
            raise LookupError(msg)
        request = next(_REQUEST_IDS)
        with self._changed:
            if self._closed is not None:
                raise DRPCExecutionError(self._closed)
            self._requests.setdefault(function, deque()).append((request, args))
            self._waiting.add(request)
        return request

    def answered(self, request: int) -> bool:
        """Whether the topology answered ``request`` (or failed it)."""
        return request in self._answers

    def wait(self, request: int, timeout: float | None, what: str) -> None:
        """Wait for ``request``'s answer; ``TimeoutError`` naming ``what`` after ``timeout``."""
        with self._changed:
            if not self._changed.wait_for(lambda: self.answered(request), timeout):
                self._forget(request)
                msg = f"{what} was not answered within {timeout} s"
                raise TimeoutError(msg)

    def result(self, request: int, function: str, args: str) -> str:
        """``request``'s answer (its JSON), or :class:`DRPCExecutionError` if it failed."""
        with self._changed:
            ok, text = self._answers.pop(request)
            self._waiting.discard(request)
        if not ok:
            msg = f"DRPC {function}({args!r}) failed: {text}"
            raise DRPCExecutionError(msg)
        return text

    def close(self, reason: str = "the topology stopped") -> None:
        """Answer every waiting request with a failure, and take no more."""
        with self._changed:
            self._closed = reason
            for request in self._waiting:
                self._answers.setdefault(request, (False, reason))
            self._requests.clear()
            self._changed.notify_all()
        mailbox.forget(self.box)

    def __reduce__(self) -> tuple[Any, ...]:
        return DRPCClient, (self.url,)

    def _forget(self, request: int) -> None:
        self._waiting.discard(request)
        self._answers.pop(request, None)
        for queue in self._requests.values():
            for entry in [e for e in queue if e[0] == request]:
                queue.remove(entry)

    def _serve(self, call: tuple[Any, ...]) -> Any:
        with self._changed:
            if call[0] == "take":
                queue = self._requests.get(call[1])
                taken = list(queue or ())
                if queue:
                    queue.clear()
                return taken
            if call[1] in self._waiting:  # not one given up on
                if call[0] == "respond":
                    self._answers[call[1]] = (True, json.dumps(call[2], default=str))
                else:
                    self._answers.setdefault(call[1], (False, call[2]))
                self._changed.notify_all()
            return None
