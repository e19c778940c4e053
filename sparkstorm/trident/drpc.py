"""DRPC: a function call answered by a running Trident topology (Storm's ``LocalDRPC``).

A request is one batch of one tuple, ``[args]``, through the function's stream; the
answer is the JSON list of the tuples its stream ends with. A function given no server
(``new_drpc_stream(function)``) is served by the run's: ``sparkstorm.run``'s REST API
(``POST /api/v1/topology/NAME/drpc/FUNCTION``) and ``sparkstorm drpc NAME FUNCTION ARGS``.
"""

from __future__ import annotations

from sparkstorm.control.drpc import DRPCClient, DRPCServer
from sparkstorm.errors import DRPCExecutionError
from sparkstorm.trident import driving

__all__ = ["DRPCExecutionError", "LocalDRPC", "server_of"]


class LocalDRPC(DRPCServer):
    """A DRPC server in this process, for tests: ``execute(function, args)`` -> JSON.

    Examples
    --------
    >>> drpc = LocalDRPC()
    >>> # topology.new_drpc_stream("words", drpc)...; then, with it running:
    >>> # drpc.execute("words", "the man")  ->  '[[3]]'

    .. versionadded:: 0.3.0
    """

    def wait(self, request: int, timeout: float | None, what: str) -> None:
        """Run the test's cluster, if it runs on this thread, until ``request`` is answered."""
        driving.run_until(lambda: self.answered(request), timeout, what)

    def shutdown(self) -> None:
        """Fail what still waits, and forget the server."""
        self.close("the DRPC server was shut down")

    def __enter__(self) -> LocalDRPC:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def server_of(given: DRPCClient | None, url: str | None) -> DRPCClient | None:
    """The server a task reaches a function's requests at: its own, or the run's.

    None where neither is: nothing can ask the function then (no LocalDRPC, no REST API).
    """
    if given is not None:
        return given
    return DRPCClient(url) if url is not None else None
