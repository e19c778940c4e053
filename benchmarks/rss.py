"""Peak resident memory of this process and all its children (JVM, Python workers)."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def process_tree(root: int) -> dict[int, list[str]]:
    """``/proc/<pid>/stat`` fields after the command name, for ``root`` and descendants."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        children.setdefault(int(stat[1]), []).append(pid)  # stat[1] is the parent pid
        stats[pid] = stat
    tree, stack = {}, [root]
    while stack:
        pid = stack.pop()
        if pid in stats:
            tree[pid] = stats[pid]
        stack.extend(children.get(pid, []))
    return tree


def _tree_rss_bytes(root: int) -> int:
    page = os.sysconf("SC_PAGE_SIZE")
    return sum(int(stat[21]) * page for stat in process_tree(root).values())  # rss pages


class PeakRss:
    """Samples the RSS of the process tree under ``root`` (this process by default) every
    ``interval`` seconds while in a ``with`` block."""

    def __init__(self, interval: float = 0.5, root: int | None = None) -> None:
        self.interval, self.peak = interval, 0
        self.root = os.getpid() if root is None else root
        self._stop = threading.Event()

    def __enter__(self) -> PeakRss:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss_bytes(self.root))
            self._stop.wait(self.interval)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _tree_rss_bytes(self.root))
