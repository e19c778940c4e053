"""Topologies running on this machine, one small file each, for the command-line verbs.

A running driver writes ``<name>.json`` (its pid, its API's address and its control
token; readable by its user only) into ``$SPARKSTORM_RUN_DIR`` (default
``~/.sparkstorm/running``) and removes it when it stops. A file whose process is gone
(the driver was killed) is stale and is removed when read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sparkstorm.private_files import home_dir, private_dir, read_private, write_private


class NotRunning(LookupError):
    """No topology of that name runs on this machine."""


def run_dir() -> Path:
    """Where running drivers register."""
    return Path(os.environ.get("SPARKSTORM_RUN_DIR") or home_dir() / "running")


def register(name: str, url: str, token: str) -> Path:
    """Record this process as running ``name``; a live one of the same name is an error.

    The folder is this user's alone (0700, owner checked) and the file is written 0600
    without following a link: it holds the run's control token.
    """
    folder = private_dir(run_dir())
    check_free(name)
    path = folder / f"{name}.json"
    entry = {"name": name, "pid": os.getpid(), "url": url, "token": token}
    write_private(path, json.dumps(entry).encode())
    return path


def check_free(name: str) -> None:
    """Raise ``ValueError`` if a live driver already runs a topology called ``name``."""
    if name in running():
        msg = f"a topology named {name!r} already runs on this machine; give it another --name"
        raise ValueError(msg)


def unregister(name: str) -> None:
    """Remove this process's registration of ``name``."""
    path = run_dir() / f"{name}.json"
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


def running() -> dict[str, dict[str, Any]]:
    """Name -> entry of this user's topologies whose driver is alive; stale files go."""
    found = {}
    me = os.getuid()
    for path in sorted(run_dir().glob("*.json")):
        try:
            if path.lstat().st_uid != me:  # another user's run in a shared folder: not ours
                continue
            entry = json.loads(read_private(path))
            os.kill(int(entry["pid"]), 0)
        except ProcessLookupError:
            path.unlink(missing_ok=True)
            continue
        except (OSError, ValueError, KeyError, TypeError):
            continue
        found[entry["name"]] = entry
    return found


def lookup(name: str) -> dict[str, Any]:
    """The entry of running topology ``name``; :class:`NotRunning` names those that run."""
    entries = running()
    if name not in entries:
        names = ", ".join(sorted(entries)) or "none"
        msg = f"no topology named {name!r} runs on this machine (running: {names})"
        raise NotRunning(msg)
    return entries[name]
