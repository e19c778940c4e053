"""Folders and files only their user reaches: the run registry, the state key, Spark's logs.

A folder in a shared place (``/tmp``, a home another user can write to) may have been
made first by someone else, or hold a link planted to make a write land elsewhere. So a
private folder is made 0700 and checked: it must be a real folder (not a link), owned by
this user, open to nobody else; a private file is written 0600 without following a link.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import tempfile
import uuid
from pathlib import Path

log = logging.getLogger(__name__)


class NotPrivate(PermissionError):
    """A folder that should be this user's alone is not: another owns it, or it is a link."""


def private_dir(path: Path) -> Path:
    """``path``, made 0700 if missing, checked to be this user's folder alone.

    A folder of this user's that others may read (an older sparkstorm made it 0755) is
    closed to them; one that is a link, or another user's, raises :class:`NotPrivate`.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        msg = f"{path} is a link or not a folder: sparkstorm keeps private files there; remove it"
        raise NotPrivate(msg)
    if info.st_uid != os.getuid():
        msg = (
            f"{path} belongs to user id {info.st_uid}, not to you ({os.getuid()}): someone "
            "else made it first; sparkstorm writes nothing there"
        )
        raise NotPrivate(msg)
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


def home_dir() -> Path:
    """Sparkstorm's folder of the user's: ``$SPARKSTORM_HOME``, else ``~/.sparkstorm``."""
    return Path(os.environ.get("SPARKSTORM_HOME") or Path.home() / ".sparkstorm")


def private_temp_dir(name: str) -> Path:
    """The user's own folder ``name`` under the temporary folder: ``$TMPDIR/name-UID``.

    When someone else holds that name, a fresh folder of this user's (``mkdtemp``) serves
    instead, said in one warning line: another user cannot make a run fail by taking it.
    """
    wanted = Path(tempfile.gettempdir()) / f"{name}-{os.getuid()}"
    try:
        return private_dir(wanted)
    except NotPrivate as problem:
        fresh = Path(tempfile.mkdtemp(prefix=f"{name}-{os.getuid()}-"))
        log.warning("%s; using %s instead", problem, fresh)
        return fresh


def write_private(path: Path, data: bytes, *, exclusive: bool = False, sync: bool = False) -> None:
    """Write ``path`` readable by its user only, never through a link (``O_NOFOLLOW``).

    ``exclusive``: fail with ``FileExistsError`` when the file exists already; ``sync``:
    on the disk before this returns (survives a power cut).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_EXCL if exclusive else os.O_TRUNC)
    descriptor = os.open(path, flags, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(data)
        if sync:
            out.flush()
            os.fsync(out.fileno())


def replace_private(path: Path, data: bytes) -> None:
    """Replace ``path`` whole, in a private folder: a new file on the disk, moved over it."""
    private_dir(path.parent)
    fresh = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    try:
        write_private(fresh, data, exclusive=True, sync=True)
        fresh.replace(path)
    except BaseException:
        fresh.unlink(missing_ok=True)
        raise


def read_private(path: Path, *, secret: bool = False) -> bytes:
    """``path``'s bytes, never through a link; a file others may write is refused.

    ``secret``: a file others may read is refused too (as ssh refuses a private key).
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(descriptor, "rb") as source:
        info = os.fstat(source.fileno())
        shut_out = 0o077 if secret else 0o022
        if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & shut_out:
            mode = stat.S_IMODE(info.st_mode)
            msg = f"{path} is not yours alone (owner {info.st_uid}, mode {mode:o})"
            if info.st_uid == os.getuid():
                msg += f": chmod 600 {path}"
            raise NotPrivate(msg)
        return source.read()
