"""``sparkstorm run``: the live table, the run, and the summary that ends it."""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.live import Live

from sparkstorm.config import (
    SPARKSTORM_SPARK_MODE,
    resolve,
    state_provider,
)
from sparkstorm.errors import InvalidTopologyError, RunAborted, SparkStormError
from sparkstorm.topology.builder import Topology
from sparkstorm.trident.coordinator import Coordinator

if TYPE_CHECKING:
    from sparkstorm.control.run import RunResult

from sparkstorm.cli.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from sparkstorm.cli.loading import load_target

REFRESH_SECS = 0.5
"""How often the live table is redrawn (between supersteps: a longer superstep delays it)."""


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


def run_name(target: str) -> str:
    """The run's name for a target: a file's stem, a dotted module's last part."""
    where = target.split(":")[0]
    if where.endswith(".py") or os.sep in where:
        return Path(where).stem
    return where.split(".")[-1]


def _unsettled_bolts(stats: dict[str, dict[str, Any]]) -> str:
    """The bolts that executed tuples they neither acked nor failed, in words.

    Who held the trees that timed out (a bolt that forgot to ack): ``; NAME executed N
    and acked M``.
    """
    said = []
    for name, row in stats.items():
        executed, acked, failed = (row.get(k, 0) for k in ("executed", "acked", "failed"))
        if row.get("kind") == "bolt" and executed > acked + failed:
            settled = f"acked {acked:,}" if acked else "acked none"
            said.append(f"{name} executed {executed:,} and {settled}")
    if not said:
        return ""
    return f"; {', '.join(said)}: a bolt must ack or fail every tuple it is given"


def outcome(result: Any) -> tuple[int, list[str]]:
    """The exit code of a finished run and the summary lines that explain it.

    Trees failed with ``shutdown`` are the stop itself, not a failure of the run, and so
    are failures whose replay the stop cut short (their spout had not run dry since);
    what the engine recovered from (a lost worker or superstep) is said, not counted.
    """
    reasons: Counter[str] = Counter()
    for_good: Counter[str] = Counter()
    cut_short: Counter[str] = Counter()
    replayed = 0
    for row in result.stats.values():
        if row.get("kind") == "spout":
            reasons.update(row.get("fail_reasons", {}))
            for_good.update(row.get("failed_for_good", {}))
            cut_short.update(row.get("replay_pending", {}))
            replayed += row.get("replayed_acked", 0)
    shutdown = reasons.pop("shutdown", 0)
    for_good.pop("shutdown", 0)
    cut_short.pop("shutdown", 0)
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
    failed = sum(for_good.values())
    problems = []
    if replayed:
        why = ", ".join(f"{reason} {n:,}" for reason, n in reasons.most_common())
        lines.append(
            f"{replayed:,} messages failed, then were acked on replay "
            f"({reasons.total():,} failures on the way: {why})"
        )
    if failed:
        why = ", ".join(f"{reason} {n:,}" for reason, n in for_good.most_common())
        held = _unsettled_bolts(result.stats) if for_good.get("timeout") else ""
        problems.append(f"{failed:,} tuple trees failed for good ({why}){held}")
    if result.errors_dropped:
        lines.append(
            f"{result.errors_dropped:,} more errors were reported; the run keeps the first "
            f"and the latest"
        )
    if distinct or result.errors_dropped:
        problems.append(f"{distinct.total() + result.errors_dropped:,} errors reported by tasks")
    if shutdown:
        lines.append(f"{shutdown:,} tuple trees still pending at the stop failed with shutdown")
    if cut_short:
        why = ", ".join(f"{reason} {n:,}" for reason, n in cut_short.most_common())
        lines.append(
            f"{cut_short.total():,} messages failed ({why}) and were not emitted again before "
            "the run ended: replay pending, cut short (their spouts had not run dry since)"
        )
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
        for spec in runtime.plan.components.values():
            if isinstance(spec.obj, Coordinator):
                console.print(f"Trident progress: {spec.obj.progress_where(runtime.conf)}")
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
    if not console.is_terminal:  # a file or a pipe: a line every so often, not a live table

        def line(runtime: Any) -> None:
            console.print(progress_line(runtime, options["name"], mode), soft_wrap=True)

        return run(
            topology, conf, args.engine, on_progress=line, progress_secs=LINE_SECS, **options
        )
    with Live(console=console, refresh_per_second=2, transient=True) as live:

        def progress(runtime: Any) -> None:
            title = f"{options['name']}  t={runtime.now():.0f}s  {_standing(runtime, mode)}"
            live.update(stats_table(runtime.stats(), title, console.width))

        return run(
            topology, conf, args.engine, on_progress=progress, progress_secs=REFRESH_SECS, **options
        )


LINE_SECS = 10.0
"""How often a run whose output is not a terminal prints a progress line."""


def progress_line(runtime: Any, name: str, mode: str | None) -> str:
    """One line of how the run stands: time, spouts' messages, in flight, steps."""
    stats = runtime.stats()
    spouts = [stats.get(s.component_id, {}) for s in runtime.plan.topology.spouts]
    emitted, acked, failed = (
        sum(row.get(k, 0) for row in spouts) for k in ("emitted", "acked", "failed")
    )
    return (
        f"{name}: t={runtime.now():.0f}s  spouts emitted {emitted:,} acked {acked:,} "
        f"failed {failed:,}  {_standing(runtime, mode)}"
    )


def _standing(runtime: Any, mode: str | None) -> str:
    """In flight, steps, and the graceful stop's countdown: how both displays end."""
    said = f"in flight {runtime.in_flight:,}  {_steps(mode)} {runtime.supersteps_run:,}"
    if runtime.draining_until is not None:
        left = max(0.0, runtime.draining_until - time.monotonic())
        said += f"  stopping: {runtime.pending_count():,} pending, {left:.0f}s left"
    return said


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


def run_command(args: argparse.Namespace) -> int:
    """``sparkstorm run``: load the target, run it, print the summary; the exit code."""
    setup_logging()
    console = summary_console()
    loaded = load_target(args)
    if isinstance(loaded, int):
        return loaded
    topology, conf, module = loaded
    name = args.name or run_name(str(args.target))
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
        from sparkstorm.config import SPARKSTORM_UI_TOKEN
        from sparkstorm.control import registry
        from sparkstorm.control.ui_token import ui_token

        try:
            registry.check_free(name)  # before Spark starts, not after
            ui_token({SPARKSTORM_UI_TOKEN: (conf or {}).get(SPARKSTORM_UI_TOKEN)})
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
