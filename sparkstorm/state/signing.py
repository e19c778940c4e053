"""Stored state is signed: whoever can write to a store cannot run code in those reading it.

State is pickled (a stateful bolt's values may be any Python object, a window holds
tuples), and a pickle runs code when it is loaded. The workers and the driver load what
the stores hold, at start, after a restart and at every rollback, so each pickle written
to Redis or to a state folder carries an HMAC-SHA256 of its bytes under the deployment's
*state secret*, and nothing is unpickled before its MAC matches: a value someone else
wrote, or changed, is refused in one error naming the key.

The secret is, first found: ``sparkstorm.state.secret`` (or the provider config's
``secret``), the ``SPARKSTORM_STATE_SECRET`` environment variable, or the file
``~/.sparkstorm/state.key``, made once (0600, 32 random bytes in hex) on first use. A
run's driver puts the secret it uses into the run's configuration, so executors on other
hosts sign and check with the same one; `sparkstorm state` on the driver's machine finds
the same file. JSON state (``"serializer": "json"``) cannot run code and is not signed.

A secret anyone could guess is no secret: one shorter than :data:`MIN_SECRET_BYTES`,
from any source, is refused, and so is a key file that another user owns or may read
(as ssh refuses a private key). The key file appears whole or not at all (written
aside, then linked into place), so a process that starts beside the one making it never
reads it half-written.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import uuid
from functools import cache
from pathlib import Path
from typing import Any

from sparkstorm.config import SPARKSTORM_STATE_SECRET
from sparkstorm.errors import StateStoreError
from sparkstorm.private_files import (
    NotPrivate,
    home_dir,
    private_dir,
    read_private,
    write_private,
)

SECRET_ENV = "SPARKSTORM_STATE_SECRET"
MIN_SECRET_BYTES = 32
"""The shortest state secret taken (the key file's is 64 hex digits)."""
MAGIC = b"ss1:"
"""What a signed value starts with (then the 32-byte MAC, then the payload)."""
_MAC_BYTES = 32


class UnsignedState(StateStoreError):
    """A stored value whose signature is missing or does not match."""


def key_file() -> Path:
    """Where the state secret is kept when none is configured."""
    return home_dir() / "state.key"


class WeakStateSecret(StateStoreError):
    """A state secret that is too short, or a key file that is not this user's alone."""


def state_secret(config: dict[str, Any] | None = None) -> str:
    """The state secret: configured, from the environment, or this user's key file.

    Raises :class:`WeakStateSecret`, saying what to do, for a secret shorter than
    :data:`MIN_SECRET_BYTES` or a key file others own or may read.
    """
    configured = (config or {}).get("secret")
    if configured:
        return _strong(str(configured), f"{SPARKSTORM_STATE_SECRET} (or the provider's secret)")
    if os.environ.get(SECRET_ENV):
        return _strong(os.environ[SECRET_ENV], f"the environment variable {SECRET_ENV}")
    return _file_secret(key_file())


def fill_state_secret(conf: dict[str, Any]) -> None:
    """Put the secret this driver signs with into ``conf``, for workers on other hosts."""
    if not conf.get(SPARKSTORM_STATE_SECRET):
        conf[SPARKSTORM_STATE_SECRET] = state_secret()


def _strong(secret: str, where: str) -> str:
    if len(secret.encode()) < MIN_SECRET_BYTES:
        msg = (
            f"the state secret from {where} has {len(secret.encode())} bytes, fewer than "
            f"{MIN_SECRET_BYTES}: anyone who guesses it can make your runs load their code. "
            "Use 64 random hex digits (python -c 'import secrets; print(secrets.token_hex(32))')"
        )
        raise WeakStateSecret(msg)
    return secret


@cache
def _file_secret(path: Path) -> str:
    private_dir(path.parent)
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    made = secrets.token_hex(32)
    aside = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    write_private(aside, made.encode(), exclusive=True, sync=True)
    try:
        os.link(aside, path)  # whole or not at all; refused when another process won
    except FileExistsError:
        return _read_key(path)  # theirs it is, whole: they linked it only once written
    finally:
        aside.unlink()
    return made


def _read_key(path: Path) -> str:
    """The key file's secret, refused when others own it, may read it, or it is short."""
    try:
        data = read_private(path, secret=True)
    except NotPrivate as exc:
        msg = f"{exc} (others could forge your state with it)"
        raise WeakStateSecret(msg) from None
    secret = data.decode(errors="replace").strip()
    if len(secret.encode()) < MIN_SECRET_BYTES:
        msg = (
            f"{path} holds {len(secret.encode())} bytes, fewer than {MIN_SECRET_BYTES} (a "
            "write cut short?): delete it and sparkstorm makes a new one (state signed "
            f"with the old one is then refused), or set {SECRET_ENV}"
        )
        raise WeakStateSecret(msg)
    return secret


class Signer:
    """Signs payloads, and checks them before anyone loads them."""

    def __init__(self, secret: str) -> None:
        self._key = secret.encode()

    @classmethod
    def of(cls, config: dict[str, Any] | None) -> Signer:
        """The signer for a provider ``config`` (see :func:`state_secret`)."""
        return cls(state_secret(config))

    def sign(self, payload: bytes) -> bytes:
        """``payload`` with its MAC in front."""
        return MAGIC + hmac.digest(self._key, payload, hashlib.sha256) + payload

    def verify(self, data: bytes, where: str) -> bytes:
        """The payload of ``data``; :class:`UnsignedState` naming ``where`` if it is forged."""
        start = len(MAGIC) + _MAC_BYTES
        payload = bytes(data[start:])
        if not (
            data[: len(MAGIC)] == MAGIC
            and hmac.compare_digest(
                bytes(data[len(MAGIC) : start]), hmac.digest(self._key, payload, hashlib.sha256)
            )
        ):
            msg = (
                f"{where} is not signed with this deployment's state secret, so it was not "
                "loaded (a pickle runs code). Written by an older sparkstorm or with another "
                "secret: set sparkstorm.state.secret (or SPARKSTORM_STATE_SECRET) to that "
                "one, or delete it; written by no one of yours: someone can write to your "
                "store (docs/security.md)"
            )
            raise UnsignedState(msg)
        return payload
