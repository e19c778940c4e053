"""Workers as threads of the driver's process: the continuous mode without Spark.

For tests of the data plane and for debugging: the same worker code, sockets and
frames as in Spark's barrier tasks, on loopback.
"""

from __future__ import annotations

import threading
from pathlib import Path

from sparkstorm.engines.continuous.driver import WorkerSetup, run_worker
from sparkstorm.errors import SparkStormError


class ThreadLauncher:
    """Runs each worker in a thread of this process."""

    def __init__(self, slots: int | None = None) -> None:
        self._threads: list[threading.Thread] = []
        self._failure: BaseException | None = None
        self.available = slots
        """The task slots :meth:`slots` says there are (tests set it); None: no limit."""

    master: str | None = None
    ui_url: str | None = None
    log_file: Path | None = None

    def launch(self, setup: WorkerSetup) -> None:
        """Start one thread per worker."""
        self._failure = None
        self._threads = []

        def body(index: int) -> None:
            try:
                run_worker(setup, index, "127.0.0.1")
            except BaseException as exc:
                self._failure = exc

        for index in range(setup.workers):
            thread = threading.Thread(target=body, args=(index,), name=f"worker-{index}")
            thread.daemon = True
            thread.start()
            self._threads.append(thread)

    def failure(self) -> BaseException | None:
        """The first error a worker thread ended with, or None."""
        return self._failure

    def slots(self) -> int | None:
        """As many as a test says; a thread needs no slot."""
        return self.available

    def join(self, timeout: float) -> None:
        """Wait for the worker threads to end."""
        for thread in self._threads:
            thread.join(timeout)

    def cancel(self) -> None:
        """Threads cannot be stopped from outside: a blocked one stays (it is a daemon)."""
        self._failure = self._failure or SparkStormError("the workers were cancelled")
