"""The user's own code, where Spark's workers can import it.

Components travel to Spark's Python workers pickled, and cloudpickle pickles a class by
reference (its module's name and its own) when its module can be imported by name: a
worker then imports it from its own ``sys.path``. That holds the installed packages,
but not the user's test folder, the script's folder or a project they run from its
checkout, which the driver found through its own ``sys.path`` (pytest and ``python -m``
put them there). So an engine ships the driver's import folders that are not installed
packages' along with the plan, and a worker adds those that exist where it runs before
it loads the plan: on one machine (``local[N]``, ``local-cluster``), always.

Classes stay pickled by reference, not by value, so a module's globals are one object
per worker process, as a Storm worker's static fields are per JVM. On a cluster whose
machines do not have those folders, the user's modules must be installed on the
executors or shipped with ``--py-files`` (a script run with ``sparkstorm run FILE`` is
shipped by value, always).
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from pathlib import Path


def _installed_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    roots.update(site.getsitepackages())
    roots.add(site.getusersitepackages())
    return tuple(str(Path(root).resolve()) for root in roots)


def user_paths() -> list[str]:
    """The driver's import folders that are not the standard library's or installed ones."""
    installed = _installed_roots()
    found: list[str] = []
    for entry in sys.path:
        path = Path(entry or os.getcwd()).resolve()
        text = str(path)
        if path.is_dir() and not text.startswith(installed) and text not in found:
            found.append(text)
    return found


def add_paths(paths: list[str]) -> None:
    """In a worker: make the driver's folders importable, where they exist here."""
    for path in paths:
        if path not in sys.path and Path(path).is_dir():
            sys.path.append(path)
