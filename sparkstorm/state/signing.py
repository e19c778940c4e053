"""Stored state is signed: whoever can write to a store cannot run code in those reading it.

State is pickled (a stateful bolt's values may be any Python object, a window holds
tuples), and a pickle runs code when it is loaded. The workers and the driver load what
the stores hold, at start, after a restart and at every rollback, so each pickle written
to Redis or to a state folder carries an HMAC-SHA256 under the deployment's *state
secret*, and nothing is unpickled before its MAC matches: a value someone else wrote, or
changed, is refused in one error naming the key.

A MAC covers the value *and its place* (the Redis hash and field, the file's path inside
the store with its role and txid), so a value signed for one place is refused in any
other: copied onto another key, planted from another topology, a delta file copied over
a later one. What no single value can show (one key put back to an earlier value, an
entry dropped) the stores catch with :meth:`Signer.tag`: each task's signed record holds
the XOR of its entries' tags, checked whole at every load.

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
MAGIC = b"ss2:"
"""What a signed value starts with (then the 32-byte MAC, then the payload)."""
OLDER_MAGIC = b"ss1:"
"""What an earlier sparkstorm signed with: a MAC of the payload alone, bound to no place."""
MAC_BYTES = 32
NO_TAGS = bytes(MAC_BYTES)
"""The XOR of no entries' tags."""

Place = tuple[str | bytes, ...]
"""Where a value lives, in parts: a Redis hash and field, a file's path and role."""


class UnsignedState(StateStoreError):
    """A stored value whose signature is missing or does not match its place."""


class OlderState(UnsignedState):
    """State signed by an earlier sparkstorm, whose MACs bound no value to its place."""


def older_state(where: str, topology: str) -> OlderState:
    """The one line for state written before values were bound to their place."""
    return OlderState(
        f"{where} was written by an earlier sparkstorm, whose signatures did not "
        f"bind a value to its place: run `sparkstorm state {topology} --resign` once to "
        "sign it again for this version (it checks every value with the old signature "
        "first), or delete it"
    )


def xor(left: bytes, right: bytes) -> bytes:
    """Two tags, or XORs of tags, combined (the order of entries does not matter)."""
    return (int.from_bytes(left, "big") ^ int.from_bytes(right, "big")).to_bytes(MAC_BYTES, "big")


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

    def tag(self, place: Place, payload: bytes = b"") -> bytes:
        """The MAC of ``payload`` at ``place``: each part length-framed, so none runs on."""
        mac = hmac.new(self._key, digestmod=hashlib.sha256)
        for part in place:
            raw = part.encode() if isinstance(part, str) else part
            mac.update(len(raw).to_bytes(8, "big"))
            mac.update(raw)
        mac.update(payload)
        return mac.digest()

    def sign(self, payload: bytes, place: Place) -> bytes:
        """``payload`` with its MAC at ``place`` in front."""
        return MAGIC + self.tag(place, payload) + payload

    def verify(self, data: bytes, where: str, place: Place, topology: str = "NAME") -> bytes:
        """The payload of ``data`` signed at ``place``; :class:`UnsignedState` naming ``where``.

        State an earlier sparkstorm signed is :class:`OlderState`, saying how to sign it
        again (``topology`` names it in that line).
        """
        start = len(MAGIC) + MAC_BYTES
        payload = bytes(data[start:])
        if self._older_payload(data) is not None:
            raise older_state(where, topology)
        if not (
            data[: len(MAGIC)] == MAGIC
            and hmac.compare_digest(bytes(data[len(MAGIC) : start]), self.tag(place, payload))
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

    def verify_older(self, data: bytes, where: str) -> bytes:
        """The payload of a value an earlier sparkstorm signed with this secret.

        :class:`UnsignedState` naming ``where`` if that secret did not sign it: it is
        neither loaded nor signed again.
        """
        payload = self._older_payload(data)
        if payload is None:
            msg = (
                f"{where} is not signed with this deployment's state secret (as an earlier "
                "sparkstorm signed), so it was not loaded or signed again: set "
                "SPARKSTORM_STATE_SECRET to the secret it was written with, or delete it"
            )
            raise UnsignedState(msg)
        return payload

    def _older_payload(self, data: bytes) -> bytes | None:
        start = len(OLDER_MAGIC) + MAC_BYTES
        if data[: len(OLDER_MAGIC)] != OLDER_MAGIC:
            return None
        payload = bytes(data[start:])
        mac = hmac.digest(self._key, payload, hashlib.sha256)
        return payload if hmac.compare_digest(bytes(data[len(OLDER_MAGIC) : start]), mac) else None
