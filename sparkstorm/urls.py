"""Connection URLs: checked when a connector is built, and shown without their password.

A URL that cannot work (a wrong scheme, no host, a port that is not a number) is a
mistake in the topology, so it fails when the topology is built, naming the connector
and giving an example, instead of as a connection error retried forever at run time.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit


def checked_url(owner: str, url: str, schemes: tuple[str, ...], example: str) -> str:
    """``url``, checked: one of ``schemes``, a host (unless a socket path), a numeric port.

    Anything else raises ``ValueError`` naming ``owner`` and showing ``example``.
    """
    problem = None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except (ValueError, TypeError) as exc:
        problem = str(exc)
    else:
        if parts.scheme not in schemes:
            problem = f"the scheme must be one of {', '.join(s + '://' for s in schemes)}"
        elif parts.scheme != "unix" and not parts.hostname:
            problem = "it names no host"
    if problem is None:
        return url
    msg = f"{owner}: {redacted(url)!r} is not a usable URL ({problem}); e.g. {example!r}"
    raise ValueError(msg)


KAFKA_PROTOCOLS = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
"""The prefixes librdkafka takes on a bootstrap server (``SSL://host:9093``)."""


def checked_bootstrap_servers(owner: str, servers: str) -> str:
    """``servers``, checked: Kafka's ``bootstrap.servers``, comma-separated ``host:port``.

    A URL with another scheme (``kafka://``, ``http://``), a missing host or port, or a
    port that is not a number raises ``ValueError`` naming ``owner``: librdkafka would
    only retry such an address for ever.
    """
    problem = None
    for server in str(servers).split(","):
        address = server.strip()
        scheme, found, rest = address.partition("://")
        if found and scheme.lower() not in KAFKA_PROTOCOLS:
            problem = f"{address!r} has a scheme, {scheme}://, that Kafka does not take"
        else:
            host, _, port = (rest if found else address).rpartition(":")
            if not host or not port.isdigit():
                problem = f"{address!r} is not host:port"
        if problem:
            break
    if problem is None:
        return servers
    msg = (
        f"{owner}: {servers!r} is not a usable bootstrap.servers list ({problem}); "
        "e.g. '127.0.0.1:9092' or 'broker1:9092,broker2:9092'"
    )
    raise ValueError(msg)


SECRET_NAME = re.compile(
    r"pass(word|wd)?|pwd|secret|token|credential|api[._-]?key|private[._-]?key|jaas",
    re.IGNORECASE,
)
"""What a key, a query parameter or a DSN field is called when its value is a secret."""
TOKEN_SCHEMES = frozenset({"nats", "tls", "ws", "wss"})
"""Schemes whose user part alone is a token (``nats://TOKEN@host``)."""


def redacted(url: str) -> str:
    """``url`` with its secrets replaced by ``***``, fit for logs and errors.

    The password of its user part, a token standing alone there (NATS), and the values
    of query parameters named as secrets (``?token=``, ``?password=``).
    """
    try:
        parts = urlsplit(str(url))
        password, user = parts.password, parts.username
    except ValueError:
        return str(url)
    host = parts.netloc.rpartition("@")[2]
    if password:
        parts = parts._replace(netloc=f"{user or ''}:***@{host}")
    elif user and parts.scheme.lower() in TOKEN_SCHEMES:
        parts = parts._replace(netloc=f"***@{host}")
    if parts.query and SECRET_NAME.search(parts.query):
        query = [
            (k, "***" if SECRET_NAME.search(k) else v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
        ]
        parts = parts._replace(query=urlencode(query, safe="*"))
    return parts.geturl()
