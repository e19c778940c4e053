"""A CPU hog beside a benchmark: one core kept busy, as other work on a shared cluster."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

HOG_MARK = "sparkstorm-cpu-hog"
"""In the hog's command line, so that CPU accounting can leave it out."""


@contextmanager
def cpu_hog(on: bool = True) -> Iterator[None]:
    """While in the block, a process of its own spins on one core (a busy loop)."""
    if not on:
        yield
        return
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass", HOG_MARK])
    try:
        yield
    finally:
        hog.kill()
        hog.wait()


def side_by_side(hog: bool) -> list[tuple[str, bool]]:
    """The runs a ``--hog`` benchmark makes: quiet, then (with ``hog``) beside the hog."""
    quiet = ("quiet machine", False)
    return [quiet, ("beside a CPU hog (one core busy)", True)] if hog else [quiet]
