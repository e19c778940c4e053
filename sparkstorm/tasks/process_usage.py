"""What a process uses of its machine: Storm UI's memory, CPU and uptime of a worker."""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class ProcessUsage:
    """One process's usage at ``at`` (seconds since the epoch)."""

    started: float
    """When the process (or the worker in it) started, seconds since the epoch."""
    at: float
    rss_bytes: int
    """Resident memory now."""
    cpu_secs: float
    """User and system CPU time since the process started."""

    def cpu_share(self, before: ProcessUsage | None) -> float | None:
        """The share of one core used since ``before`` (1.0: a whole core), if known."""
        if before is None or self.at <= before.at:
            return None
        return max(0.0, (self.cpu_secs - before.cpu_secs) / (self.at - before.at))


def usage_row(now: ProcessUsage | None, before: ProcessUsage | None) -> dict[str, float | None]:
    """The API's figures of a process: uptime, memory (MB), CPU seconds and CPU %.

    The uptime is ``uptimeSeconds``, Storm UI's key; ``uptimeSecs`` is the same, kept
    for a release for readers of sparkstorm 0.4.
    """
    if now is None:
        return {
            "uptimeSeconds": None,
            "uptimeSecs": None,
            "memoryMb": None,
            "cpuSecs": None,
            "cpuPercent": None,
        }
    share = now.cpu_share(before)
    up = round(now.at - now.started, 1)
    return {
        "uptimeSeconds": up,
        "uptimeSecs": up,
        "memoryMb": round(now.rss_bytes / 2**20, 1),
        "cpuSecs": round(now.cpu_secs, 1),
        "cpuPercent": None if share is None else round(100 * share, 1),
    }


def resident_bytes() -> int:
    """The resident memory of the calling process now (Linux), else its peak."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def usage(started: float) -> ProcessUsage:
    """The calling process's usage now; ``started`` is when its work began."""
    times = os.times()
    return ProcessUsage(started, time.time(), resident_bytes(), times.user + times.system)
