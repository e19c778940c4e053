"""A stack dump of a process's Python threads: Storm's jstack, for a Python worker."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import traceback


def thread_stacks() -> str:
    """Every thread of the calling process with its stack, the innermost call last."""
    frames = sys._current_frames()
    lines = [f"{time.strftime('%Y-%m-%d %H:%M:%S')} {socket.gethostname()} pid {os.getpid()}"]
    for thread in sorted(threading.enumerate(), key=lambda t: t.ident or 0):
        frame = frames.get(thread.ident or -1)
        kind = "daemon" if thread.daemon else "thread"
        lines.append(f'\n"{thread.name}" {kind} id={thread.ident}')
        lines += [line.rstrip("\n") for line in traceback.format_stack(frame)] if frame else []
    return "\n".join(lines) + "\n"
