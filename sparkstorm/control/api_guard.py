"""What the REST API answers at all: its own address, its own page, bodies it can take.

A browser is a confused deputy: any page its user opens may send requests to the API on
loopback (a form posted across origins needs no permission), or rebind a name of its
own to 127.0.0.1 and read the answers as if they came from its own site. So, before any
route runs:

- ``Host`` must name this API: a loopback name, the address it was bound to, this
  machine's name, or one listed in ``sparkstorm.ui.hosts`` (a rebinding page sends its
  own name, and gets 403);
- a request that changes anything (any method but GET and HEAD) that comes from a page
  must come from the API's own page: its ``Origin`` (or, without one, its ``Referer``)
  must be the origin it was sent to. The command line sends neither, and passes;
- a body must be ``application/json`` (DRPC's arguments may be
  ``application/octet-stream``): the types a cross-origin form or a "simple" fetch can
  send are refused, so a browser always asks first (a CORS preflight, which this API
  never grants);
- where the control routes need the token (off loopback, or a token given), a request
  that changes anything must carry it before its body is read (401);
- a body is at most :data:`MAX_BODY_BYTES` (413 past it, counted as it arrives: the
  body is read here, whole, and handed to the route), and must arrive within
  :data:`BODY_SECS` (408): a sender that stops half-way does not hold its connection;
- every answer forbids framing (clickjacking) and content sniffing.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

MAX_BODY_BYTES = 1 << 20
"""The largest request body the API reads (a DRPC call's arguments, a rebalance)."""

BODY_SECS = 10.0
"""How long a request's body may take to arrive, once its headers are in."""

NEEDS_TOKEN = (
    "this control route needs 'Authorization: Bearer TOKEN': the token was printed when "
    "the run started, and is in the run's file on the driver's machine, where its user's "
    "`sparkstorm` verbs read it"
)

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "localhost.localdomain"})

SAFE_METHODS = frozenset({"GET", "HEAD"})

JSON = "application/json"
BINARY = "application/octet-stream"

HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]
"""Sent with every answer."""

Scope = dict[str, Any]


def host_name(netloc: str) -> str:
    """The host of ``host[:port]`` (brackets off an IPv6 address), lower case."""
    host = urlsplit(f"//{netloc}").hostname
    return (host or "").lower()


class Guard:
    """ASGI middleware refusing what the module's docstring lists, before any route runs."""

    def __init__(self, app: Any, hosts: Iterable[str], token: str | None = None) -> None:
        self.app = app
        self.hosts = LOOPBACK_NAMES | {h.lower().strip("[]") for h in hosts if h}
        """The names ``Host`` may give."""
        self.token = token
        """What a request that changes anything must carry (None: nothing)."""

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Serve ``scope`` through the app, or answer the refusal instead."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        problem = self.refusal(scope, headers)
        if problem is not None:
            status, message = problem
            await _answer(send, status, message)
            return

        async def send_guarded(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        if scope["method"] not in SAFE_METHODS:  # read the body here, whole and capped
            try:
                body = await asyncio.wait_for(_read_body(receive), BODY_SECS)
            except TimeoutError:
                late = f"the request's body did not arrive within {BODY_SECS:g} s"
                await _answer(send, 408, late)
                return
            if body is None:
                await _answer(send, 413, _too_large())
                return
            receive = _replaying(body, receive)
        await self.app(scope, receive, send_guarded)

    def refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """The status and message to answer instead of the route, or None to serve it."""
        host = headers.get("host", "")
        if host_name(host) not in self.hosts:
            return 403, (
                f"Host {host!r} is not this API's address: a page that renamed itself to "
                "this machine is refused. Reach the API by the address the run printed; "
                "behind a proxy, list the name in sparkstorm.ui.hosts"
            )
        if scope["method"] in SAFE_METHODS:
            return None
        if self.token is not None and not bearer_matches(headers, self.token):
            return 401, NEEDS_TOKEN
        source = headers.get("origin") or headers.get("referer")
        if source is not None and _origin(source) != f"{scope.get('scheme', 'http')}://{host}":
            return 403, (
                f"a {scope['method']} from {_origin(source)!r}, another origin than this "
                "API's, is refused: only this API's own page and the command line may "
                "change a run"
            )
        length = headers.get("content-length")
        if length is not None and length.strip().isdigit() and int(length) > MAX_BODY_BYTES:
            return 413, _too_large()
        if (length not in (None, "0") or "transfer-encoding" in headers) and (
            problem := _content_type_refusal(scope["path"], headers.get("content-type", ""))
        ) is not None:
            return 415, problem
        return None


def bearer_matches(headers: dict[str, str], token: str) -> bool:
    """Whether ``Authorization: Bearer`` gives ``token`` (compared in constant time)."""
    given = headers.get("authorization", "").removeprefix("Bearer ").strip()
    return hmac.compare_digest(given.encode(), token.encode())


async def _read_body(receive: Any) -> bytes | None:
    """The request's body, or None once it grows past :data:`MAX_BODY_BYTES`."""
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client went away: the route sees an empty body
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


def _replaying(body: bytes, receive: Any) -> Any:
    """A ``receive`` giving ``body`` once, then what the server says next (a disconnect)."""
    given = False

    async def replay() -> dict[str, Any]:
        nonlocal given
        if given:
            return dict(await receive())
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def _content_type_refusal(path: str, given: str) -> str | None:
    kind = given.partition(";")[0].strip().lower()
    drpc = "/drpc/" in path
    if kind == JSON or (drpc and kind == BINARY):
        return None
    wanted = f"{JSON} or {BINARY} (the arguments as they are)" if drpc else JSON
    return (
        f"a body of type {given or 'none'!r} is refused: send it as {wanted}; the types a "
        "web page may send to another site without asking are never taken"
    )


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url`` (``null`` stays ``null``)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else url


def _too_large() -> str:
    return f"the request body is larger than the API takes ({MAX_BODY_BYTES:,} bytes)"


async def _answer(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
