"""The ``sparkstorm`` command: ``sparkstorm run FILE_OR_MODULE[:ATTR] [options]``.

Exit codes: 0 success, 2 bad usage or invalid topology, 1 runtime failure.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

import cloudpickle
from rich.console import Console
from rich.live import Live

from sparkstorm.errors import InvalidTopologyError, SparkStormError
from sparkstorm.topology.builder import Topology


class UsageError(Exception):
    """The command line or the target cannot be used; exit code 2."""


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
        sys.path.insert(0, str(path.resolve().parent))
        spec.loader.exec_module(module)
        cloudpickle.register_pickle_by_value(module)
        return module
    try:
        return importlib.import_module(target)
    except ImportError as exc:
        msg = f"cannot import module {target!r}: {exc}"
        raise UsageError(msg) from exc


def resolve_target(spec: str) -> tuple[Topology, dict[str, Any], ModuleType]:
    """``FILE_OR_MODULE[:ATTR]`` -> (topology, conf, module).

    ATTR (default ``topology``) is a Topology, or a zero-argument function returning a
    Topology or ``(topology, conf)``.
    """
    target, _, attr = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if not target:
        target, attr = spec, ""
    module = load_module(target)
    attr = attr or "topology"
    if not hasattr(module, attr):
        found = [
            n
            for n, v in vars(module).items()
            if isinstance(v, Topology) or (callable(v) and n in ("topology", "build"))
        ]
        msg = (
            f"{target} has no attribute {attr!r}; name a Topology or a zero-argument "
            f"function returning (topology, conf) as {target}:NAME (candidates: {found})"
        )
        raise UsageError(msg)
    value = getattr(module, attr)
    if callable(value) and not isinstance(value, Topology):
        value = value()
    conf: dict[str, Any] = {}
    if isinstance(value, tuple) and len(value) == 2:
        value, conf = value
    if not isinstance(value, Topology):
        msg = (
            f"{target}:{attr} gave {type(value).__name__}, not a Topology; return "
            f"builder.create_topology() (optionally with a conf dict)"
        )
        raise UsageError(msg)
    return value, dict(conf or {}), module


def parse_conf(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; values parse as JSON when they can, else stay strings."""
    conf: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            msg = f"--conf takes KEY=VALUE, got {item!r}"
            raise UsageError(msg)
        try:
            conf[key] = json.loads(raw)
        except json.JSONDecodeError:
            conf[key] = raw
    return conf


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``sparkstorm``."""
    parser = argparse.ArgumentParser(prog="sparkstorm", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a topology")
    run.add_argument("target", help="FILE_OR_MODULE[:ATTR]")
    run.add_argument("--engine", choices=["spark", "local"], default="spark")
    run.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    stop = run.add_mutually_exclusive_group()
    stop.add_argument("--duration", type=float, default=None, metavar="SECONDS")
    stop.add_argument(
        "--until-idle",
        action="store_true",
        help="stop when nothing is in flight and spouts emit nothing (default)",
    )
    run.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    run.add_argument("--stats-json", default=None, metavar="PATH")
    run.add_argument("--name", default=None)
    run.add_argument("--quiet", action="store_true", help="no live table, no summary")
    run.add_argument(
        "--no-spark-ui", action="store_true", help="do not start the Spark UI (spark engine)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    from sparkstorm.display import stats_table
    from sparkstorm.runtime.driver import run

    args = build_parser().parse_args(argv)
    console = Console(stderr=False)
    try:
        topology, conf, module = resolve_target(args.target)
        conf.update(parse_conf(args.conf))
    except (UsageError, InvalidTopologyError) as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return 2
    name = args.name or Path(args.target.split(":")[0]).stem

    def started(runtime: Any) -> None:
        url = getattr(runtime.engine, "ui_url", None)
        if url and not args.quiet:
            console.print(f"Spark UI: {url}")

    options: dict[str, Any] = {
        "master": args.master,
        "duration": args.duration,
        "name": name,
        "on_start": started,
        "spark_ui": not args.no_spark_ui,
    }
    try:
        if args.quiet:
            result = run(topology, conf, args.engine, **options)
        else:
            with Live(console=console, refresh_per_second=2, transient=True) as live:

                def progress(runtime: Any) -> None:
                    live.update(stats_table(runtime.stats(), f"{name}  t={runtime.now():.0f}s"))

                result = run(topology, conf, args.engine, on_progress=progress, **options)
    except InvalidTopologyError as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return 2
    except SparkStormError as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return 1
    if args.stats_json:
        Path(args.stats_json).write_text(
            json.dumps(
                {
                    "name": name,
                    "engine": args.engine,
                    "elapsed_secs": result.elapsed_secs,
                    "startup_secs": result.startup_secs,
                    "supersteps": result.supersteps,
                    "interrupted": result.interrupted,
                    "profile_secs": result.profile,
                    "components": result.stats,
                    "errors": [vars(e) for e in result.errors],
                },
                indent=2,
            )
        )
    if not args.quiet:
        how = "interrupted" if result.interrupted else "finished"
        console.print(
            stats_table(
                result.stats,
                f"{name}: {how} after "
                f"{result.elapsed_secs:.1f}s on {args.engine} "
                f"(start-up {result.startup_secs:.1f}s, "
                f"{result.supersteps} supersteps)",
            )
        )
        for error in result.errors[-5:]:
            console.print(f"[red]error[/red] in {error.component}:{error.task}: {error.message}")
        report = getattr(module, "report", None)
        if callable(report):
            report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
