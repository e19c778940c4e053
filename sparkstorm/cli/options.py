"""The command line: ``sparkstorm``'s verbs and options, and the checks of their values."""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkstorm import __version__
from sparkstorm.cli.exits import UsageError
from sparkstorm.config import (
    SPARK_PREFIX,
    check_key,
    check_value,
    parse_value,
)

if TYPE_CHECKING:
    pass


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
        "--executors",
        "-e",
        action="append",
        default=None,
        metavar="COMPONENT=N",
        help="Storm's -e: keep COMPONENT's tasks in N workers, its executors (a worker runs "
        "its tasks in one loop, as an executor in one thread); repeat for several",
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
    state.add_argument(
        "--reset",
        action="store_true",
        help="forget the Trident progress the driver keeps for NAME on this machine: its "
        "next run starts at txid 1 (as clearing it in Storm's ZooKeeper)",
    )
    state.add_argument(
        "--resign",
        action="store_true",
        help="sign again, for this version, the state an earlier sparkstorm wrote (each "
        "value checked with its old signature first); with --from or --conf",
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
