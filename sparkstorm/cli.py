"""The ``sparkstorm`` command: ``sparkstorm run FILE_OR_MODULE[:ATTR] [options]``.

Exit codes: 0 a clean run; 1 the run had task errors or failed trees (a summary line
says how many and why); 2 bad usage, an invalid topology or configuration, or a user
file that does not import (one line naming file:line); 130 interrupted (Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import logging
import math
import os
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import cloudpickle
from rich.console import Console
from rich.live import Live

from sparkstorm import __version__
from sparkstorm.config import (
    SPARK_PREFIX,
    SPARKSTORM_SPARK_MODE,
    TOPOLOGY_ACKER_EXECUTORS,
    TOPOLOGY_DEBUG,
    check_key,
    check_value,
    parse_value,
    resolve,
    state_provider,
)
from sparkstorm.errors import InvalidTopologyError, RunAborted, SparkStormError
from sparkstorm.streamparse import install_import_hook, is_streamparse_topology
from sparkstorm.streamparse.convert import check_ticks
from sparkstorm.streamparse.project import (
    find_project,
    open_project,
    project_topology,
    topology_class_name,
)
from sparkstorm.topology.builder import Topology

if TYPE_CHECKING:
    from sparkstorm.control.run import RunResult

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
REFRESH_SECS = 0.5
"""How often the live table is redrawn (between supersteps: a longer superstep delays it)."""


class UsageError(Exception):
    """The command line or the target cannot be used; exit code 2."""


def user_code_error(exc: BaseException, path: str | None, doing: str) -> UsageError:
    """One line for an error raised by the user's own file: ``file:line: Type: message``.

    The line is the innermost frame in ``path`` (or, without one, the innermost frame
    of all); a syntax error names its own line.
    """
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename}:{exc.lineno}"
        return UsageError(f"{where}: SyntaxError: {exc.msg} ({doing})")
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
        sys.path.insert(0, str(path.resolve().parent))
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise user_code_error(exc, str(path.resolve()), f"importing {target}") from None
        cloudpickle.register_pickle_by_value(module)
        return module
    if os.getcwd() not in sys.path:  # module form from the current directory, as python -m
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as exc:
        msg = f"cannot import module {target!r}: {exc}"
        raise UsageError(msg) from None
    except Exception as exc:
        raise user_code_error(exc, None, f"importing {target}") from None
    cloudpickle.register_pickle_by_value(module)
    return module


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
        except (UsageError, InvalidTopologyError):
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


def parse_conf(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs, each value parsed to its key's type and checked.

    A known key's value parses to what the key takes (``false``/``False``/``0``...);
    another key's as JSON when it can, else it stays a string.
    """
    conf: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            msg = f"--conf takes KEY=VALUE, got {item!r}"
            raise UsageError(msg)
        conf[key] = parse_value(key, raw)
        check_key(key)
        check_value(key, conf[key], " (from --conf)")
    return conf


def read_spark_conf(path: str) -> dict[str, str]:
    """A ``spark-defaults.conf``-style file: ``spark.key value`` (or ``=``) per line."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        msg = f"--spark-conf {path}: {exc.strerror or exc}"
        raise UsageError(msg) from None
    settings: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.replace("=", " ", 1).partition(" ")
        if not key.startswith(SPARK_PREFIX) or not value.strip():
            msg = f"{path}:{number}: expected 'spark.KEY VALUE', got {line!r}"
            raise UsageError(msg)
        settings[key] = value.strip()
    return settings


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        msg = f"expected a number of seconds > 0, got {raw!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _wait_seconds(raw: str) -> float:
    """A drain's seconds: 0 or more (0: what is pending fails back at once)."""
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        msg = f"expected a number of seconds >= 0, got {raw!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _sparse_seconds(raw: str) -> float:
    """``sparse run -t``'s seconds: 0 or less is no limit (``inf``: until stopped)."""
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        msg = f"expected a number of seconds, got {raw!r}"
        raise argparse.ArgumentTypeError(msg)
    return value if value > 0 else math.inf


def check_options(args: argparse.Namespace, conf: dict[str, Any]) -> None:
    """Refuse options that cannot work at all, before anything starts.

    Those that do nothing on the engine chosen get a warning (and are dropped).
    """
    spark_only = [
        name
        for name, given in (
            ("--master", args.master is not None),
            ("--mode", args.mode is not None),
            ("--spark-conf", args.spark_conf is not None),
            ("--no-spark-ui", args.no_spark_ui),
            ("spark.* settings", any(str(k).startswith(SPARK_PREFIX) for k in conf)),
        )
        if given
    ]
    if args.engine == "local" and spark_only:  # switching engines needs no deleting of flags
        print(
            f"sparkstorm: warning: {', '.join(spark_only)}: only for --engine spark; this "
            "run uses local, where they do nothing",
            file=sys.stderr,
        )
        for key in [k for k in conf if str(k).startswith(SPARK_PREFIX)]:
            del conf[key]
    if args.stats_json:
        folder = Path(args.stats_json).resolve().parent
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            msg = f"--stats-json {args.stats_json}: folder {folder} is missing or read-only"
            raise UsageError(msg)


class _Parser(argparse.ArgumentParser):
    """argparse without abbreviations: ``--engin local`` is a typo, refused, not ``--engine``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def summary_console() -> Console:
    """Where the run's lines and tables go: stdout, as wide as the terminal.

    Output that is not a terminal (a log, CI) is never wrapped mid-sentence: a line is
    as long as it is, and the tables get 160 columns (or ``COLUMNS``, if it says more
    than the 110 they need).
    """
    if sys.stdout.isatty():
        return Console(stderr=False)
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) >= 110 else 160
    return Console(stderr=False, width=width, soft_wrap=True)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``sparkstorm`` (its verbs' parsers are of the same class)."""
    parser = _Parser(
        prog="sparkstorm",
        description="Run and operate sparkstorm topologies: sparkstorm run "
        "FILE_OR_MODULE[:ATTR] [options]. Exit codes: 0 a clean run; 1 the run had task "
        "errors or failed trees (a summary line says how many and why); 2 bad usage, an "
        "invalid topology or configuration, or a user file that does not import (one line "
        "naming file:line); 130 interrupted (Ctrl-C, SIGTERM).",
    )
    parser.add_argument("--version", action="version", version=f"sparkstorm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a topology")
    run.add_argument(
        "target",
        nargs="?",
        help="FILE_OR_MODULE[:ATTR]; in a streamparse project, omit it to run the "
        "topology of topology_specs (the only one, or the one --name names)",
    )
    run.add_argument(
        "--engine",
        choices=["spark", "local"],
        default="spark",
        help="spark (default: local[*], or --master) or local (one Python process, no JVM)",
    )
    run.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    run.add_argument(
        "--mode",
        choices=["superstep", "continuous"],
        default=None,
        help="the Spark engine's execution mode (sparkstorm.spark.mode; default continuous)",
    )
    stop = run.add_mutually_exclusive_group()
    stop.add_argument(
        "--duration",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="stop gracefully after this many seconds of topology time",
    )
    stop.add_argument(
        "-t",
        "--time",
        dest="duration",
        type=_sparse_seconds,
        metavar="SECONDS",
        help="as sparse run -t: --duration, where 0 or less runs until stopped",
    )
    stop.add_argument(
        "--until-idle",
        action="store_true",
        help="stop once nothing is in flight or pending and the spouts are quiet "
        "(the default for a module that sets UNTIL_IDLE = True)",
    )
    run.add_argument(
        "--conf",
        "-o",
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a configuration key (-o and --option as in sparse run)",
    )
    run.add_argument(
        "-e",
        "--environment",
        default=None,
        help="a streamparse project's environment (config.json envs): its options, and "
        "its entry of a per-environment parallelism ('par')",
    )
    run.add_argument(
        "-d", "--debug", action="store_true", help="topology.debug=true (as sparse run -d)"
    )
    run.add_argument(
        "-a",
        "--ackers",
        type=int,
        default=None,
        help="topology.acker.executors (as sparse run -a)",
    )
    run.add_argument(
        "--spark-conf", default=None, metavar="FILE", help="spark-defaults.conf-style settings"
    )
    run.add_argument(
        "--stats-json",
        default=None,
        metavar="PATH",
        help="write the final statistics there, as JSON",
    )
    run.add_argument(
        "-n",
        "--name",
        default=None,
        help="the run's name (default: the file's stem); in a streamparse project "
        "without a target, also the topology file's",
    )
    run.add_argument(
        "--quiet", action="store_true", help="no live table: only the final summary and errors"
    )
    run.add_argument(
        "--no-spark-ui", action="store_true", help="do not start the Spark UI (spark engine)"
    )
    run.add_argument(
        "--no-ui",
        action="store_true",
        help="serve no REST API (then list, kill, activate and deactivate cannot reach it)",
    )
    sub.add_parser("list", help="the topologies running on this machine")
    kill = sub.add_parser("kill", help="stop a running topology gracefully, as Ctrl-C does")
    kill.add_argument("name", help="the running topology's name (sparkstorm list)")
    kill.add_argument(
        "--wait",
        "-w",
        type=_wait_seconds,
        default=30.0,
        metavar="SECS",
        help="the longest the drain may last before what is pending fails (default 30)",
    )
    rebalance = sub.add_parser(
        "rebalance",
        help="place a continuous-mode topology's tasks over N workers (as Storm's rebalance)",
    )
    rebalance.add_argument("name", help="the running topology's name (sparkstorm list)")
    rebalance.add_argument(
        "--workers",
        "-n",
        type=int,
        default=None,
        metavar="N",
        help="how many workers (one task slot each); default: as many as now",
    )
    rebalance.add_argument(
        "--wait",
        "-w",
        type=_wait_seconds,
        default=30.0,
        metavar="SECS",
        help="the longest the spouts stay deactivated while what is in flight drains "
        "(default 30); what is still pending then fails back to its spout to be replayed",
    )
    state = sub.add_parser(
        "state",
        help="a topology's committed state as of its last checkpoint (what a restart loads)",
    )
    state.add_argument("name", help="the topology's name (--name of its run; its file's stem)")
    state.add_argument(
        "--from",
        dest="target",
        default=None,
        metavar="FILE_OR_MODULE[:ATTR]",
        help="take the state provider from this topology's configuration",
    )
    state.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a configuration key (topology.state.provider and .config, say)",
    )
    state.add_argument(
        "--component", default=None, help="only this component (a Trident state's name)"
    )
    state.add_argument(
        "--limit", type=int, default=20, help="keys shown per component, 0 for all (default 20)"
    )
    state.add_argument(
        "--json", action="store_true", help="every key, one JSON object a line, nothing else"
    )
    drpc = sub.add_parser(
        "drpc",
        help="call a running Trident topology's DRPC function; print its result (JSON)",
    )
    drpc.add_argument("name", help="the running topology's name")
    drpc.add_argument("function", help="the DRPC function (new_drpc_stream's name)")
    drpc.add_argument("args", help="the arguments, one string, as Storm's DRPC takes them")
    drpc.add_argument(
        "--timeout",
        type=_seconds,
        default=None,
        metavar="SECS",
        help="the longest to wait for the answer (default: the topology's "
        "sparkstorm.drpc.request.timeout.secs, 60)",
    )
    for verb, text in (
        ("activate", "ask a deactivated topology's spouts for tuples again"),
        ("deactivate", "stop asking the spouts for tuples; what is in flight completes"),
    ):
        sub.add_parser(verb, help=text).add_argument(
            "name", help="the running topology's name (sparkstorm list)"
        )
    return parser


def control(args: argparse.Namespace) -> int:
    """``list``, ``kill``, ``rebalance``, ``activate``, ``deactivate``: through the driver's API."""
    from sparkstorm.control import registry

    if args.command == "list":
        entries = registry.running()
        if not entries:
            print("no topologies running")
            return EXIT_OK
        print(f"{'name':24} {'status':9} {'engine':7} {'uptime':>12}  api")
        for name, entry in entries.items():
            try:
                summary = _call(entry, "GET", f"/api/v1/topology/{name}")
            except OSError as exc:
                print(f"{name:24} {'?':9} {'?':7} {'?':>12}  {entry['url']} ({exc})")
                continue
            print(
                f"{name:24} {summary['status']:9} {summary['engine']:7} "
                f"{summary['uptime']:>12}  {entry['url']}"
            )
        return EXIT_OK
    try:
        entry = registry.lookup(args.name)
        path = f"/api/v1/topology/{args.name}/{args.command}"
        body = None
        if args.command in ("kill", "rebalance"):
            path += f"/{args.wait:g}"
        if args.command == "rebalance" and args.workers is not None:
            body = {"rebalanceOptions": {"numWorkers": args.workers}}
        _call(entry, "POST", path, body)
    except registry.NotRunning as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Refused as exc:
        print(f"sparkstorm: error: {args.name} refused: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(
            f"sparkstorm: error: {args.name} did not answer at {entry['url']}: {exc}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if args.command == "kill":
        print(f"{args.name}: stopping (draining for up to {args.wait:g}s)")
    elif args.command == "rebalance":
        over = f"{args.workers} workers" if args.workers else "as many workers"
        print(f"{args.name}: rebalancing over {over} (draining for up to {args.wait:g}s)")
    else:
        print(f"{args.name}: {args.command}d")
    return EXIT_OK


def call_drpc(args: argparse.Namespace) -> int:
    """``drpc``: one DRPC call through the running driver's API; its JSON on stdout."""
    from sparkstorm.control import registry

    path = f"/api/v1/topology/{args.name}/drpc/{urllib.parse.quote(args.function, safe='')}"
    wait = 600.0  # the driver answers within its own timeout first
    if args.timeout is not None:
        path += f"?timeout={args.timeout:g}"
        wait = args.timeout + 10
    try:
        entry = registry.lookup(args.name)
        answer = _call(entry, "POST", path, args.args.encode(), timeout=wait)
    except registry.NotRunning as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Refused as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return EXIT_USAGE if exc.code in (400, 401, 404) else EXIT_FAILED
    except OSError as exc:
        print(f"sparkstorm: error: {args.name} did not answer: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(answer))
    return EXIT_OK


def show_state(args: argparse.Namespace) -> int:
    """``state``: the committed state of a topology, read from its state provider."""
    from sparkstorm.state import read_committed_state
    from sparkstorm.trident.reading import persisted_states

    try:
        topology, conf = resolve_target(args.target)[:2] if args.target else (None, {})
        conf.update(parse_conf(args.conf))
        if topology is not None and persisted_states(topology):
            return show_trident_state(args, topology, conf)
        state = read_committed_state(args.name, conf)
    except (UsageError, InvalidTopologyError, ValueError) as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SparkStormError as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    components = [args.component] if args.component else state.components
    if args.json:
        for component, task, key, value in state.items():
            if component in components:
                row = {"component": component, "task": task, "key": key, "value": value}
                print(json.dumps(row, default=repr))
        return EXIT_OK
    where = f" at {state.where}" if state.where else ""
    if state.txid < 0:
        print(f"{args.name}: no checkpoint committed in the {state.provider} provider{where}")
        return EXIT_OK
    print(f"{args.name}: checkpoint {state.txid}, in the {state.provider} provider{where}")
    for component in components:
        tasks = [t for t in state.tasks if t.component == component and not t.windows]
        pairs = sorted(
            ((k, v) for t in tasks for k, v in t.data.items()), key=lambda kv: repr(kv[0])
        )
        print(f"\n{component}: {len(pairs):,} keys in {len(tasks)} task(s)")
        for key, value in pairs[: args.limit or None]:
            print(f"  {key!r}: {value!r}")
        if args.limit and len(pairs) > args.limit:
            print(f"  ... {len(pairs) - args.limit:,} more (--limit 0 shows all, --json reads)")
    return EXIT_OK


def show_trident_state(args: argparse.Namespace, topology: Topology, conf: dict[str, Any]) -> int:
    """``state --from`` a Trident topology: its maps as committed, and its last txid."""
    from sparkstorm.trident.reading import read_trident_state

    try:
        state = read_trident_state(topology, conf, args.name)
    except Exception as exc:  # a store that cannot be reached, say
        print(f"sparkstorm: error: {args.name}'s Trident state: {exc}", file=sys.stderr)
        return EXIT_FAILED
    shown = [m for m in state.maps if args.component in (None, m.name)]
    if args.json:
        for m in shown:
            for key, value in m.items:
                print(json.dumps({"state": m.name, "key": key, "value": value}, default=repr))
        return EXIT_OK
    print(f"{args.name}: Trident batch {state.txid} committed last")
    for m in shown:
        if m.unreadable is not None:
            print(f"\n{m.name} ({m.where}): {m.unreadable}")
            continue
        print(f"\n{m.name} ({m.where}): {len(m.items):,} keys")
        for key, value in m.items[: args.limit or None]:
            print(f"  {key!r}: {value!r}")
        if args.limit and len(m.items) > args.limit:
            print(f"  ... {len(m.items) - args.limit:,} more (--limit 0 shows all, --json reads)")
    return EXIT_OK


def _call(
    entry: dict[str, Any], method: str, path: str, body: Any = None, *, timeout: float = 10
) -> Any:
    """One request to a running driver's API, with its control token; the JSON answer.

    ``body`` goes as JSON, or as it is if it is bytes (a DRPC call's arguments).
    """
    raw = isinstance(body, bytes)
    request = urllib.request.Request(
        entry["url"] + path,
        data=body if raw or body is None else json.dumps(body).encode(),
        method=method,
        headers={
            "Authorization": f"Bearer {entry['token']}",
            "Content-Type": "text/plain; charset=utf-8" if raw else "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        message = json.loads(exc.read() or b"{}").get("error", exc.reason)
        text = f"HTTP {exc.code}: {message}"
        raise Refused(text, exc.code) from None


class Refused(OSError):
    """The running driver answered, and refused the request (an HTTP error)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def outcome(result: Any) -> tuple[int, list[str]]:
    """The exit code of a finished run and the summary lines that explain it.

    Trees failed with ``shutdown`` are the stop itself, not a failure of the run; what
    the engine recovered from (a lost worker or superstep) is said, not counted.
    """
    reasons: Counter[str] = Counter()
    for row in result.stats.values():
        if row.get("kind") == "spout":
            reasons.update(row.get("fail_reasons", {}))
    shutdown = reasons.pop("shutdown", 0)
    distinct: Counter[tuple[str, str]] = Counter()
    recovered = []
    for error in result.errors:
        if error.recovered:
            recovered.append(f"recovered in {error.component}: {error.message.splitlines()[0]}")
        else:
            distinct[(error.component, error.message.splitlines()[0])] += error.count
    lines = recovered + [
        f"error in {component} (x{count:,}): {message}"
        if count > 1
        else f"error in {component}: {message}"
        for (component, message), count in distinct.most_common(10)
    ]
    if len(distinct) > 10:
        lines.append(f"... and {len(distinct) - 10} more distinct errors (see --stats-json)")
    failed = sum(reasons.values())
    problems = []
    if failed:
        why = ", ".join(f"{reason} {n:,}" for reason, n in reasons.most_common())
        problems.append(f"{failed:,} tuple trees failed ({why})")
    if result.errors_dropped:
        lines.append(
            f"{result.errors_dropped:,} more errors were reported; the run keeps the first "
            f"and the latest"
        )
    if distinct or result.errors_dropped:
        problems.append(f"{distinct.total() + result.errors_dropped:,} errors reported by tasks")
    if shutdown:
        lines.append(f"{shutdown:,} tuple trees still pending at the stop failed with shutdown")
    for (component, stream), dropped in result.captured_dropped.items():
        lines.append(
            f"captured {component}/{stream}: the oldest {dropped:,} values were dropped to keep "
            f"the latest (sparkstorm.capture.max.values)"
        )
    if problems:
        lines.append("run failed: " + "; ".join(problems))
    if result.interrupted:
        return EXIT_INTERRUPTED, lines
    return (EXIT_FAILED if problems else EXIT_OK), lines


class _StderrNow(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time, so the live table can redirect it."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def _not_an_interrupt(record: logging.LogRecord) -> bool:
    """Drop libraries' tracebacks of a Ctrl-C (py4j logs one); the CLI says it in a line."""
    return not (record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt))


def setup_logging() -> None:
    """Warnings and errors as plain lines on stderr, for the command line."""
    handler = _StderrNow()
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.addFilter(_not_an_interrupt)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    # pika logs each failed connection attempt with a traceback; the RabbitMQ spout
    # reports it once, in one line naming host, port, vhost and cause.
    logging.getLogger("pika").setLevel(logging.CRITICAL)
    logging.getLogger("sparkstorm.debug").setLevel(logging.INFO)  # topology.debug's lines


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = build_parser().parse_args(argv)  # bad usage: argparse exits with 2
    install_import_hook()  # a streamparse project's imports give sparkstorm's classes
    if args.command == "state":
        return show_state(args)
    if args.command == "drpc":
        return call_drpc(args)
    if args.command != "run":
        return control(args)
    setup_logging()
    console = summary_console()
    loaded = _load(args)
    if isinstance(loaded, int):
        return loaded
    topology, conf, module = loaded
    name = args.name or Path(str(args.target).split(":")[0]).stem.split(".")[-1]
    # -t 0 asks for no limit: until stopped, even for a module that sets UNTIL_IDLE
    until_idle = args.until_idle or (args.duration is None and getattr(module, "UNTIL_IDLE", False))
    if args.duration == math.inf:
        args.duration = None
    options: dict[str, Any] = {
        "master": args.master,
        "duration": args.duration,
        "until_idle": until_idle,
        "name": name,
        "spark_ui": not args.no_spark_ui,
        "api": not args.no_ui,
        **_callbacks(console, name),
    }
    if not args.no_ui:
        from sparkstorm.control import registry

        try:
            registry.check_free(name)  # before Spark starts, not after
        except ValueError as exc:
            print(f"sparkstorm: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    try:
        result = _run(topology, conf, args, console, options)
    except InvalidTopologyError as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RunAborted as exc:
        print(f"sparkstorm: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("sparkstorm: interrupted during start-up; nothing ran", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SparkStormError as exc:
        print(f"sparkstorm: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return _finish(result, args, module, console, spark_mode(args, conf))


def _load(args: argparse.Namespace) -> tuple[Topology, dict[str, Any], Any] | int:
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


def _callbacks(console: Console, name: str) -> dict[str, Any]:
    """``run``'s ``on_start`` and ``on_stopping``: what the terminal says at each."""

    def started(runtime: Any) -> None:
        url = runtime.engine.ui_url
        if url:
            console.print(f"Spark UI: {url}")
        if runtime.api_shown:
            shown, token = runtime.api_shown
            console.print(f"UI: {shown}/  (REST API: /api/v1/topology/{name})")
            if token:  # off loopback the control routes need it: say it here, once
                console.print(f"token: {token}  (Authorization: Bearer TOKEN, for the controls)")
        log_file = runtime.engine.log_file
        if log_file:
            console.print(f"Spark log: {log_file}")
        checkpoints = runtime.checkpoints
        if checkpoints.enabled:
            provider = state_provider(runtime.conf)
            if checkpoints.committed >= 0:
                console.print(
                    f"state: resuming {name!r} from checkpoint {checkpoints.committed} "
                    f"({provider} provider)"
                )
            else:
                console.print(
                    f"state: no checkpoint of {name!r} in the {provider} provider: the "
                    f"stateful bolts start empty (state is kept under the topology's name)"
                )

    def stopping(runtime: Any, drain_secs: float) -> None:
        pending = runtime.pending_count()
        if pending:
            console.print(
                f"stopping: waiting up to {drain_secs:g}s for {pending:,} pending tuple "
                f"trees to complete (a second Ctrl-C or SIGTERM stops at once)"
            )

    return {"on_start": started, "on_stopping": stopping}


def _run(
    topology: Topology,
    conf: dict[str, Any],
    args: argparse.Namespace,
    console: Console,
    options: dict[str, Any],
) -> RunResult:
    """Run the topology, with the live table unless ``--quiet``."""
    from sparkstorm.control.run import run
    from sparkstorm.display import stats_table

    mode = spark_mode(args, conf)
    if args.quiet:
        return run(topology, conf, args.engine, **options)
    with Live(console=console, refresh_per_second=2, transient=True) as live:

        def progress(runtime: Any) -> None:
            title = (
                f"{options['name']}  t={runtime.now():.0f}s  in flight "
                f"{runtime.in_flight:,}  {_steps(mode)} {runtime.supersteps_run:,}"
            )
            if runtime.draining_until is not None:  # the graceful stop: a countdown
                left = max(0.0, runtime.draining_until - time.monotonic())
                title += f"  stopping: {runtime.pending_count():,} pending, {left:.0f}s left"
            live.update(stats_table(runtime.stats(), title, console.width))

        return run(
            topology, conf, args.engine, on_progress=progress, progress_secs=REFRESH_SECS, **options
        )


def spark_mode(args: argparse.Namespace, conf: dict[str, Any]) -> str | None:
    """The Spark engine's mode this run uses (None on the local engine)."""
    return str(resolve(conf)[SPARKSTORM_SPARK_MODE]) if args.engine == "spark" else None


def _steps(mode: str | None) -> str:
    """What the run's step count counts: supersteps, or the continuous workers' turns."""
    return "worker turns" if mode == "continuous" else "supersteps"


def _finish(
    result: RunResult,
    args: argparse.Namespace,
    module: Any,
    console: Console,
    mode: str | None = None,
) -> int:
    """Write ``--stats-json``, print the summary and the module's ``report``; the exit code."""
    from sparkstorm.display import stats_table

    if args.stats_json:
        summary = {
            "name": result.name,
            "engine": args.engine,
            "elapsed_secs": result.elapsed_secs,
            "startup_secs": result.startup_secs,
            "supersteps": result.supersteps,
            "interrupted": result.interrupted,
            "profile_secs": result.profile,
            "components": result.stats,
            "errors": [vars(e) for e in result.errors],
        }
        Path(args.stats_json).write_text(json.dumps(summary, indent=2, default=str))
    code, lines = outcome(result)
    how = "interrupted" if result.interrupted else "finished"
    console.print(
        stats_table(
            result.stats,
            f"{result.name}: {how} after {result.elapsed_secs:.1f}s on {args.engine}"
            f"{f' ({mode} mode)' if mode else ''} (start-up {result.startup_secs:.1f}s, "
            f"{result.supersteps} {_steps(mode)})",
            console.width if console.is_terminal else None,  # a file or pipe gets every column
        )
    )
    report = getattr(module, "report", None)
    if callable(report):
        report(result)
    for line in lines:
        print(line, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
