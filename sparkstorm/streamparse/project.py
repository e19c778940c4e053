"""A streamparse project on disk: ``config.json``, its environments, ``topologies/``, ``src/``.

As ``sparse run`` reads them: the topology files are in ``topology_specs``; an
environment (``envs``, picked with ``-e``, or the only one) gives Storm ``options`` and
``log`` settings, overridden by the topology's ``config``, then by the command line; the
components' modules are imported from ``src/`` (the topology folder's sibling).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from sparkstorm.errors import InvalidTopologyError
from sparkstorm.streamparse.convert import is_streamparse_topology, to_topology
from sparkstorm.streamparse.specs import TopologyType
from sparkstorm.topology.builder import Topology

CONFIG_FILE = "config.json"


@dataclass(frozen=True)
class Project:
    """A folder holding ``config.json`` (streamparse's project file), read."""

    root: Path
    config: dict[str, Any]

    @property
    def topology_specs(self) -> Path:
        """The folder of topology files (``topology_specs``, default ``topologies/``)."""
        return self.root / str(self.config.get("topology_specs") or "topologies")

    def topology_file(self, name: str | None) -> Path:
        """The file of topology ``name`` (without ``.py``); the only one if None.

        Raises
        ------
        InvalidTopologyError
            If there is none, or several and no name, or no file of that name.
        """
        folder = self.topology_specs
        if name is not None:
            path = folder / f"{name}.py"
            if not path.is_file():
                msg = f"no topology file {path} (topology_specs in {self.root / CONFIG_FILE})"
                raise InvalidTopologyError(msg)
            return path
        files = sorted(folder.glob("*.py"))
        if len(files) == 1:
            return files[0]
        if not files:
            msg = f"no topology definitions in {folder} (topology_specs in {CONFIG_FILE})"
        else:
            names = ", ".join(f.stem for f in files)
            msg = f"several topologies in {folder} ({names}): name one, as with sparse -n"
        raise InvalidTopologyError(msg)

    def environment(self, name: str | None) -> tuple[str | None, dict[str, Any]]:
        """The environment ``name`` of ``envs`` (the only one if None) and its settings.

        Raises
        ------
        InvalidTopologyError
            If ``name`` is not in ``envs``, or None while there are several.
        """
        envs = self.config.get("envs") or {}
        if name is None:
            if len(envs) > 1:
                msg = (
                    f"{self.root / CONFIG_FILE} has several environments ({', '.join(envs)}): "
                    f"name one with --environment (-e)"
                )
                raise InvalidTopologyError(msg)
            if not envs:
                return None, {}
            name = next(iter(envs))
        if name not in envs:
            msg = f"no environment {name!r} in {self.root / CONFIG_FILE} (has: {', '.join(envs)})"
            raise InvalidTopologyError(msg)
        return name, dict(envs[name] or {})


def find_project(start: Path) -> Project | None:
    """The project whose ``config.json`` is in ``start`` or the nearest folder above it."""
    for folder in (start.resolve(), *start.resolve().parents):
        file = folder / CONFIG_FILE
        if file.is_file():
            try:
                config = json.loads(file.read_text())
            except ValueError as exc:
                msg = f"{file}: not valid JSON ({exc})"
                raise InvalidTopologyError(msg) from None
            if isinstance(config, dict) and ("topology_specs" in config or "envs" in config):
                return Project(folder, config)
    return None


def environment_options(env: dict[str, Any]) -> dict[str, Any]:
    """An environment's Storm ``options`` and its ``log`` settings as pystorm's keys."""
    options = dict(env.get("options") or {})
    log = env.get("log") or {}
    path, file = log.get("path") or env.get("log_path"), log.get("file") or env.get("log_file")
    if path:
        options["pystorm.log.path"] = path
    if file:
        options["pystorm.log.file"] = file
    for key in ("max_bytes", "backup_count"):
        if isinstance(log.get(key), int):
            options[f"pystorm.log.{key}"] = log[key]
    if isinstance(log.get("level"), str):
        options["pystorm.log.level"] = log["level"].lower()
    return options


def open_project(topology_file: Path) -> Project | None:
    """The project of a topology file, with its ``src/`` put on the path as ``sparse`` does.

    ``src/`` is the topology folder's sibling; it goes after the installed packages.
    """
    src = topology_file.resolve().parent.parent / "src"
    if src.is_dir() and str(src) not in sys.path:
        sys.path.append(str(src))
    return find_project(topology_file.parent)


def topology_class_name(module: ModuleType, target: str) -> str | None:
    """The name of the one streamparse ``Topology`` class ``module`` holds, if any.

    Raises
    ------
    InvalidTopologyError
        If it holds several: name one as ``FILE:NAME``.
    """
    found = [n for n, v in vars(module).items() if is_streamparse_topology(v)]
    if len(found) > 1:
        msg = (
            f"{target} holds several streamparse topologies ({', '.join(found)}): name "
            f"one as {target}:NAME"
        )
        raise InvalidTopologyError(msg)
    return found[0] if found else None


def project_topology(
    topology_class: TopologyType, project: Project | None, environment: str | None
) -> tuple[Topology, dict[str, Any]]:
    """The topology and its configuration: the environment's options under its ``config``.

    ``environment`` (or the project's only one) also picks a per-environment ``par``.
    """
    name, env = project.environment(environment) if project else (environment, {})
    topology, conf = to_topology(topology_class, name)
    return topology, {**environment_options(env), **conf}
