"""The watchdog: a user call that has not returned for a while is reported.

Spouts' ``next_tuple``, ``ack`` and ``fail`` run on the driver between supersteps, and
bolts' ``execute`` in the superstep (on the driver with the local engine, in a Spark
Python worker with the spark engine, where ``prepare`` and ``cleanup`` run too); in the
continuous mode, all of them in its workers. One that blocks stalls the whole topology
(or its worker, and soon every worker sending to it), as it stalls a Storm executor.
A thread samples what is being called and how far it got; a call that made no progress
for ``limit_secs`` is reported once, naming the component and task, and marked ``blocked``
so that a Ctrl-C can interrupt it. On the driver the report is a log line; in a Spark
executor or a continuous worker it travels to the driver, which logs it
(``engines/spark/blocked_calls.py``, ``engines/continuous/driver.py``).
"""

from __future__ import annotations

import logging
import sysconfig
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

log = logging.getLogger(__name__)

WATCHDOG_SECS = 5.0
"""The default of ``sparkstorm.watchdog.secs``."""

Probe = Callable[[], tuple[str, Any] | None]
"""What is being called now and a progress marker, or None between user calls."""


OWN = "sparkstorm's own "
"""What a blocked call of sparkstorm's own code starts with (a coordinator, an acker)."""
OWN_FRAMES = 6
"""The innermost frames shown of a blocked call of sparkstorm's own."""


def blocked_message(call: str, secs: float, where: str = "") -> str:
    """The one line that says ``call`` has blocked for ``secs`` (``where``: in which process).

    A call of sparkstorm's own (no frame of the user's under way: see :func:`blocked_at`)
    is not the user's to fix, and is said so.
    """
    if call.startswith(OWN):
        return (
            f"{call} has not returned for {secs:g} s{where}: sparkstorm is waiting there on "
            f"something outside your code (a store, a broker, the driver, a loaded "
            f"machine: the frames below say which); the whole topology waits for it"
        )
    return (
        f"{call} has not returned for {secs:g} s{where}: it must not block (wait with a "
        f"short timeout, or hand the work to a thread of your own); the whole topology "
        f"waits for it"
    )


_SPARKSTORM = str(Path(__file__).parents[1])
_LIBRARIES = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")})


def blocked_at(call: str, frame: FrameType | None) -> tuple[str, str]:
    """``call`` as the report names it, and the stack it shows.

    With a frame of the user's under way: the user's frames. With none (a component of
    sparkstorm's, waiting in a library: the Trident coordinator in zmq's poll, say): the
    call marked :data:`OWN`, and its innermost frames, which say what it waits for.
    """
    if frame is None:
        return call, ""
    frames = traceback.extract_stack(frame)
    if any(not _ours_or_a_library(f.filename) for f in frames):
        return call, users_stack(frame)
    return OWN + call, "".join(traceback.format_list(frames[-OWN_FRAMES:])).rstrip()


def _ours_or_a_library(filename: str) -> bool:
    return (
        filename.startswith((_SPARKSTORM, "<frozen", *_LIBRARIES))
        or "/pyspark/" in filename
        or "/site-packages/" in filename
    )


def users_stack(frame: FrameType) -> str:
    """Where a running call is, in the user's own frames (sparkstorm's and pyspark's left out)."""
    frames = [
        f
        for f in traceback.extract_stack(frame)
        if not f.filename.startswith((_SPARKSTORM, "<frozen")) and "/pyspark/" not in f.filename
    ]
    return "".join(traceback.format_list(frames)).rstrip()


def _log_blocked(call: str, secs: float) -> None:
    log.warning("%s", blocked_message(call, secs))


class Watchdog:
    """Samples ``probe`` on a daemon thread while running (a context manager, or ``start``).

    ``report(call, limit_secs)`` is called once per blocked call; the default logs it.
    """

    def __init__(
        self,
        probe: Probe,
        limit_secs: float = WATCHDOG_SECS,
        report: Callable[[str, float], None] = _log_blocked,
    ) -> None:
        self.probe = probe
        self.limit_secs = limit_secs
        self.report = report
        self.blocked: str | None = None
        """The call that has not returned for ``limit_secs``, while it has not."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="sparkstorm-watchdog", daemon=True)

    def start(self) -> Watchdog:
        """Start watching (for as long as the process lives, unless used as a context)."""
        self._thread.start()
        return self

    def __enter__(self) -> Watchdog:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        last, still = None, 0.0
        period = min(1.0, self.limit_secs / 5)
        while not self._stop.wait(period):
            seen = self.probe()
            if seen is None or seen != last:
                last, still, self.blocked = seen, 0.0, None
                continue
            still += period
            if still >= self.limit_secs and self.blocked is None:
                self.blocked = seen[0]
                try:
                    self.report(seen[0], self.limit_secs)
                except Exception as exc:  # a report that fails must not stop the watching
                    log.warning("could not report a blocked call (%s): %s", seen[0], exc)
