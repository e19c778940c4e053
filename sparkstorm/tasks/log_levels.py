"""Storm UI's "Change log level": a logger's level for some seconds, then back.

The driver and each continuous worker keep their own; the driver forwards each change.
"""

from __future__ import annotations

import logging
import time

SECRET_LOGGERS = ("py4j.java_gateway", "py4j.clientserver")
"""Loggers that write secrets at DEBUG: every command py4j sends and every answer it gets.

The gateway's token goes in the authentication command (``A``) and again when PySpark
builds its accumulator (``PythonAccumulatorV2(host, port, token)``); answers carry the
per-call secrets of the sockets Spark opens to serve data. Whoever reads the token can
drive the run's JVM.
"""
WIRE_LINES = ("Command to send: ", "Answer received: ")

ROOT = "ROOT"
"""Storm's name for the root logger."""
LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")


class _HideSecrets(logging.Filter):
    """Keeps what py4j sends and receives out of its DEBUG lines: only their size shows.

    Masking the token by the shape of one line let it through in another (the
    accumulator's), so no command or answer is shown at all, whatever it holds.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        for head in WIRE_LINES:
            if text.startswith(head):
                size = len(text) - len(head)
                record.msg = f"{head}({size} characters, not shown: they may hold secrets)"
                record.args = None
        return True


_HIDE_SECRETS = _HideSecrets()


def hide_secrets() -> None:
    """Keep the secrets some libraries log at DEBUG out of every log, whatever its level."""
    for name in SECRET_LOGGERS:
        logger = logging.getLogger(name)
        if _HIDE_SECRETS not in logger.filters:
            logger.addFilter(_HIDE_SECRETS)


class LogLevels:
    """The loggers set for a while, and the levels they go back to."""

    def __init__(self) -> None:
        self.set_until: dict[str, tuple[str, float, int]] = {}
        """Logger -> (the level set, when it goes back (``time.time()``), the level before)."""

    def set(self, name: str, level: str, secs: float) -> None:
        """Give logger ``name`` (``ROOT``: the root) ``level`` for ``secs`` seconds."""
        hide_secrets()
        logger = logging.getLogger(None if name == ROOT else name)
        before = self.set_until[name][2] if name in self.set_until else logger.level
        logger.setLevel(level)
        self.set_until[name] = (level, time.time() + secs, before)
        _say_set(logger, name, level, f"for {secs:g} s")

    def expire(self) -> None:
        """Put back the loggers whose time is up."""
        if not self.set_until:
            return
        now = time.time()
        for name, (_, until, before) in list(self.set_until.items()):
            if now >= until:
                logging.getLogger(None if name == ROOT else name).setLevel(before)
                del self.set_until[name]

    def current(self) -> dict[str, str]:
        """Logger -> the level set now, for processes that take it as a whole."""
        return {name: level for name, (level, _, _) in self.set_until.items()}

    def shown(self) -> dict[str, dict[str, object]]:
        """Storm's ``namedLoggerLevels``: each logger set, its level and when it goes back."""
        return {
            name: {"target_level": level, "timeout_epoch": round(until, 3)}
            for name, (level, until, _) in self.set_until.items()
        }


class AppliedLevels:
    """The levels of a process handed the whole set each time (a superstep's worker).

    It sets them, and puts back the loggers no longer in the set.
    """

    def __init__(self) -> None:
        self.before: dict[str, int] = {}

    def apply(self, levels: dict[str, str]) -> None:
        """Give each logger its level; loggers left out go back to the level they had."""
        for name, before in list(self.before.items()):
            if name not in levels:
                logging.getLogger(None if name == ROOT else name).setLevel(before)
                del self.before[name]
        for name, level in levels.items():
            logger = logging.getLogger(None if name == ROOT else name)
            self.before.setdefault(name, logger.level)
            if logging.getLevelName(logger.level) != level:
                logger.setLevel(level)
                _say_set(logger, name, level, "until the driver puts it back")


def _say_set(logger: logging.Logger, name: str, level: str, how_long: str) -> None:
    """One record through the logger just set, at its new level (at most INFO).

    Its effect made visible in the worker's log view: a logger set to DEBUG shows a DEBUG
    record at once, though the code under it may log nothing at DEBUG for a while.
    """
    logger.log(
        min(logging.getLevelName(level), logging.INFO),
        "log level of %s set to %s %s (Storm UI's Change log level)",
        name,
        level,
        how_long,
    )
