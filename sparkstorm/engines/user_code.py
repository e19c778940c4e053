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

The user's modules may also import a package under another name: a streamparse project
imports ``streamparse``, which :mod:`sparkstorm.streamparse` stands in for. Such aliases
travel with the folders, so that a worker imports the user's modules as the driver did.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import site
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType


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


@dataclass(frozen=True)
class Alias:
    """Module names under ``package`` that import from ``modules`` instead.

    ``modules`` maps each full name under ``package`` (``package`` itself included) to
    the module that stands for it; any other name under ``package`` fails to import
    with ``missing`` in its message, which says what to do instead.
    """

    package: str
    modules: dict[str, str]
    missing: str


@dataclass(frozen=True)
class UserCode:
    """What a worker needs to import the user's modules as the driver does."""

    paths: list[str] = field(default_factory=list)
    aliases: tuple[Alias, ...] = ()

    def install(self) -> None:
        """In a worker: add the folders and the aliases, before the plan is unpickled."""
        add_paths(self.paths)
        for alias in self.aliases:
            add_alias(alias)


_ALIASES: dict[str, Alias] = {}


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """First on ``sys.meta_path``: an aliased name imports the module standing for it.

    It comes before the path finders, so an installed package of the aliased name is
    never imported while the alias holds.
    """

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        alias = _ALIASES.get(fullname.partition(".")[0])
        if alias is None:
            return None
        if fullname not in alias.modules:
            msg = f"No module named {fullname!r}: {alias.missing}"
            raise ModuleNotFoundError(msg, name=fullname)
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """The module standing for ``spec.name``, imported under its own name."""
        return importlib.import_module(_ALIASES[spec.name.partition(".")[0]].modules[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """Nothing: the module ran when it was imported under its own name."""


_FINDER = _AliasFinder()


def add_alias(alias: Alias) -> None:
    """Make ``alias.package`` and its listed modules import what stands for them.

    Names already imported under ``alias.package`` (the real package, imported before)
    are dropped from ``sys.modules`` so that the next import takes the alias.
    """
    _ALIASES[alias.package] = alias
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name in [n for n in sys.modules if n.partition(".")[0] == alias.package]:
        if sys.modules[name].__name__ != alias.modules.get(name):
            del sys.modules[name]


def user_code() -> UserCode:
    """The driver's user folders and aliases, for the workers."""
    return UserCode(user_paths(), tuple(_ALIASES.values()))
