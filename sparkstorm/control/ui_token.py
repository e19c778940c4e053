"""The REST API's control token: given by the user, or made up for the run.

A token the user gives is asked for on loopback too (a shared machine's choice). It
can come from ``sparkstorm.ui.token``, ``$SPARKSTORM_UI_TOKEN``, or the first line of
the file ``$SPARKSTORM_UI_TOKEN_FILE`` names (the last two never show in ``ps``). It
travels as an HTTP header, so one that a header cannot carry is refused at start, in
one line, rather than breaking every CLI verb later.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any

from sparkstorm.config import SPARKSTORM_UI_TOKEN
from sparkstorm.private_files import NotPrivate, read_private

log = logging.getLogger(__name__)

GIVEN_TOKEN = "the one you gave (sparkstorm.ui.token, or the environment)"
"""What the start line says of a token the user gave: it is not printed."""
TOKEN_ENV = "SPARKSTORM_UI_TOKEN"
TOKEN_FILE_ENV = "SPARKSTORM_UI_TOKEN_FILE"
_warned: set[Path] = set()
"""Token files already said to be readable by others (said once a process)."""
HEADER_SAFE = re.compile(r"[\x21-\x7e]+")
"""What ``Authorization: Bearer TOKEN`` can carry: visible ASCII, no space."""


def token_given(conf: dict[str, Any]) -> bool:
    """Whether the user gave the API a token (its control routes then always ask for it)."""
    return bool(
        conf[SPARKSTORM_UI_TOKEN] or os.environ.get(TOKEN_ENV) or os.environ.get(TOKEN_FILE_ENV)
    )


def ui_token(conf: dict[str, Any]) -> str:
    """The API's control token, the first given, else one made up.

    Raises ``ValueError``, in one line saying what to do, for a token file that cannot
    be read, is empty or is not its user's alone, and for a token a header cannot carry.
    """
    if conf[SPARKSTORM_UI_TOKEN]:
        given, where = str(conf[SPARKSTORM_UI_TOKEN]), SPARKSTORM_UI_TOKEN
    elif os.environ.get(TOKEN_ENV):
        given, where = os.environ[TOKEN_ENV], TOKEN_ENV
    elif os.environ.get(TOKEN_FILE_ENV):
        path = Path(os.environ[TOKEN_FILE_ENV])
        given, where = _first_line(path), f"{TOKEN_FILE_ENV}={path}"
    else:
        return secrets.token_urlsafe(16)
    if not HEADER_SAFE.fullmatch(given):
        msg = (
            f"{where}: the token has characters an HTTP header cannot carry (spaces, line "
            "breaks, non-ASCII): use letters, digits and -._~+/= only"
        )
        raise ValueError(msg)
    return given


def _first_line(path: Path) -> str:
    """The token file's first line; refused if others own it or may change it."""
    where = f"{TOKEN_FILE_ENV}={path}"
    try:
        data = read_private(path)
    except NotPrivate as exc:
        msg = f"{where}: {exc}: someone else could change the token"
        raise ValueError(msg) from None
    except OSError as exc:
        msg = f"{where}: the token file cannot be read ({exc.strerror})"
        raise ValueError(msg) from None
    lines = data.decode(errors="replace").splitlines()
    given = lines[0].strip() if lines else ""
    if not given:
        msg = f"{where}: the token file's first line is empty"
        raise ValueError(msg)
    if stat.S_IMODE(os.stat(path).st_mode) & 0o044 and path not in _warned:
        _warned.add(path)
        log.warning(
            "%s: other users can read the token file, and with it drive the run: chmod 600 %s",
            where,
            path,
        )
    return given
