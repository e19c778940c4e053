"""What ``sparkstorm run`` runs: the user's file, module or streamparse project, loaded.

An error raised by the user's own code is one line naming its file and line.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
import uuid
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import cloudpickle

from sparkstorm.config import (
    TOPOLOGY_ACKER_EXECUTORS,
    TOPOLOGY_DEBUG,
    resolve,
)
from sparkstorm.errors import InvalidTopologyError
from sparkstorm.streamparse import is_streamparse_topology
from sparkstorm.streamparse.convert import check_ticks
from sparkstorm.streamparse.project import (
    find_project,
    open_project,
    project_topology,
    topology_class_name,
)
from sparkstorm.topology.builder import Topology

if TYPE_CHECKING:
    pass

from sparkstorm.cli.exits import EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from sparkstorm.cli.options import check_options, parse_conf, read_spark_conf


def user_code_error(exc: BaseException, path: str | None, doing: str) -> UsageError:
    """One line for an error raised by the user's own file: ``file:line: Type: message``.

    The line is the innermost frame in ``path`` (or, without one, the innermost frame
    of all); a syntax error names its own line.
    """
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename}:{exc.lineno}"
        return UsageError(f"{where}: SyntaxError: {exc.msg} ({doing})")
    site = getattr(exc, "site", None)  # where the user declared what is at fault
    if site is not None:
        return UsageError(f"{site[0]}:{site[1]}: {type(exc).__name__}: {exc} ({doing})")
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if path is None or Path(f.filename) == Path(path).resolve()]
    chosen = mine or frames
    where = f"{chosen[-1].filename}:{chosen[-1].lineno}: " if chosen else ""
    return UsageError(f"{where}{type(exc).__name__}: {exc} ({doing})")


def load_module(target: str) -> ModuleType:
    """Import a ``.py`` file or a dotted module name.

    A file's module is registered with cloudpickle by value, so its classes can be
    shipped to Spark executors that cannot import the file.
    """
    if target.endswith(".py") or Path(target).exists():
        path = Path(target)
        if not path.is_file():
            msg = f"no such file: {target}"
            raise UsageError(msg)
        name = f"sparkstorm_user_{path.stem}_{uuid.uuid4().hex[:8]}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            msg = f"cannot import {target} as Python"
            raise UsageError(msg)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        _on_path(os.getcwd())  # the current directory's packages, as for the module form
        sys.path.insert(0, str(path.resolve().parent))
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise user_code_error(exc, str(path.resolve()), f"importing {target}") from None
        cloudpickle.register_pickle_by_value(module)
        return module
    _on_path(os.getcwd())  # module form from the current directory, as python -m
    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as exc:
        msg = f"cannot import module {target!r}: {exc}"
        raise UsageError(msg) from None
    except Exception as exc:
        raise user_code_error(exc, None, f"importing {target}") from None
    cloudpickle.register_pickle_by_value(module)
    return module


def _on_path(folder: str) -> None:
    """``folder`` on ``sys.path``, ahead of the installed packages, once."""
    if folder not in sys.path:
        sys.path.insert(0, folder)


def _takes_no_arguments(value: Any) -> bool:
    try:
        params = inspect.signature(value).parameters.values()
    except (TypeError, ValueError):
        return False
    free = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return all(p.default is not p.empty or p.kind in free for p in params)


def resolve_target(
    spec: str, environment: str | None = None
) -> tuple[Topology, dict[str, Any], ModuleType]:
    """``FILE_OR_MODULE[:ATTR]`` -> (topology, conf, module).

    ATTR (default ``topology``) is a Topology, or a zero-argument function returning a
    Topology or ``(topology, conf)``, or a streamparse ``Topology`` class (without ATTR,
    the one the file defines or imports). A streamparse project's ``src/`` is put on the
    path first, and its ``config.json`` environment (``environment``, or the only one)
    gives the configuration the topology's ``config`` overrides.
    """
    target, _, attr = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if not target:
        target, attr = spec, ""
    project = open_project(Path(target)) if Path(target).is_file() else None
    module = load_module(target)
    if not attr and not hasattr(module, "topology"):
        attr = topology_class_name(module, target) or ""
    attr = attr or "topology"
    value = getattr(module, attr, None)
    if is_streamparse_topology(value):
        return (*project_topology(value, project, environment), module)
    if not hasattr(module, attr):
        found = [
            n
            for n, v in vars(module).items()
            if isinstance(v, Topology)
            or (
                inspect.isfunction(v) and v.__module__ == module.__name__ and _takes_no_arguments(v)
            )
        ]
        msg = (
            f"{target} has no attribute {attr!r}; name a Topology or a zero-argument "
            f"function returning (topology, conf) as {target}:NAME"
            + (f" (candidates: {found})" if found else "")
            + "; a script that runs its topology when imported should keep that under "
            "if __name__ == '__main__' and define topology() for sparkstorm run"
        )
        raise UsageError(msg)
    value = getattr(module, attr)
    if callable(value) and not isinstance(value, Topology):
        if not _takes_no_arguments(value):
            msg = f"{target}:{attr} needs arguments; name a function that takes none"
            raise UsageError(msg)
        try:
            value = value()
        except InvalidTopologyError as exc:
            if exc.site is None:  # a mistake only the whole topology shows
                raise
            raise user_code_error(exc, None, f"calling {target}:{attr}()") from None
        except UsageError:
            raise
        except Exception as exc:
            path = getattr(module, "__file__", None)
            raise user_code_error(exc, path, f"calling {target}:{attr}()") from None
    conf: dict[str, Any] = {}
    if isinstance(value, tuple) and len(value) == 2:
        value, conf = value
    if not isinstance(value, Topology):
        msg = (
            f"{target}:{attr} gave {type(value).__name__}, not a Topology; return "
            f"builder.create_topology() (optionally with a conf dict), or name a "
            f"streamparse Topology class"
        )
        raise UsageError(msg)
    return value, dict(conf or {}), module


def load_target(args: argparse.Namespace) -> tuple[Topology, dict[str, Any], Any] | int:
    """The topology, its configuration (checked) and its module; an exit code if bad."""
    try:
        overrides = parse_conf(args.conf)
        if args.debug:
            overrides[TOPOLOGY_DEBUG] = True
        if args.ackers is not None:
            overrides[TOPOLOGY_ACKER_EXECUTORS] = args.ackers  # checked with the rest below
        if args.spark_conf:
            overrides.update(read_spark_conf(args.spark_conf))
        if args.target is None:
            args.target = str(_project_topology(args.name))
        topology, conf, module = resolve_target(args.target, args.environment)
        conf.update(overrides)
        if args.mode is not None:
            conf["sparkstorm.spark.mode"] = args.mode
        check_options(args, conf)
        resolve(conf)  # every key and value checked before anything starts
        check_ticks(topology, conf)
    except (UsageError, InvalidTopologyError) as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("sparkstorm: interrupted while loading the topology", file=sys.stderr)
        return EXIT_INTERRUPTED
    return topology, conf, module


def _project_topology(name: str | None) -> Path:
    """The topology file of the streamparse project here, as ``sparse run`` finds it."""
    project = find_project(Path.cwd())
    if project is None:
        msg = (
            "the following arguments are required: target (FILE_OR_MODULE[:ATTR]); only "
            "in a streamparse project (a folder with config.json) can it be omitted"
        )
        raise UsageError(msg)
    return project.topology_file(name)
