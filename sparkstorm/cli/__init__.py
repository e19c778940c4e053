"""The ``sparkstorm`` command: ``sparkstorm run FILE_OR_MODULE[:ATTR] [options]``.

Exit codes: 0 a clean run; 1 the run had task errors or failed trees (a summary line
says how many and why); 2 bad usage, an invalid topology or configuration, or a user
file that does not import (one line naming file:line); 130 interrupted (Ctrl-C, SIGTERM).

One module a concern: ``options`` (the command line), ``loading`` (the user's code),
``running`` (a run and its summary), ``verbs`` (the operator verbs, DRPC, state).
"""

from __future__ import annotations

from sparkstorm.cli.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UsageError
from sparkstorm.cli.loading import resolve_target
from sparkstorm.cli.options import build_parser
from sparkstorm.cli.running import run_command
from sparkstorm.cli.verbs import call_drpc, control, show_state
from sparkstorm.streamparse import install_import_hook

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "UsageError",
    "build_parser",
    "main",
    "resolve_target",
]


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
    _sigterm_interrupts()
    return run_command(args)


def _sigterm_interrupts() -> None:
    """SIGTERM before the run takes its signals (loading, Spark's start-up) acts as Ctrl-C.

    Without it, a SIGTERM then killed the process at once (143, nothing said), leaving
    Spark's JVM to notice later; now the start-up stops, says so, and exits 130.
    """
    import signal

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
