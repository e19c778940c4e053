"""Who is at the other end of a connection: the local user, for a loopback peer.

Every local user reaches a loopback port from the same address, so an address says
nothing about who connects. The kernel knows: a loopback peer's socket is this
machine's too, listed in ``/proc/net/tcp`` (``tcp6``) with its owner's user id. The
REST API uses it to keep room for its own user, whatever other users hold.
"""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

TABLES: dict[int, Path] = {
    socket.AF_INET: Path("/proc/net/tcp"),
    socket.AF_INET6: Path("/proc/net/tcp6"),
}


def peer_key(sock: socket.socket | None) -> str:
    """``uid:N`` for a loopback peer whose owner the kernel names, else ``ip:ADDRESS``."""
    if sock is None:
        return "ip:?"
    try:
        peer, here = sock.getpeername(), sock.getsockname()
    except OSError:
        return "ip:?"
    host = peer[0]
    if ipaddress.ip_address(host).is_loopback or host.startswith("::ffff:127."):
        uid = _owner(sock.family, peer[:2], here[:2])
        if uid is not None:
            return f"uid:{uid}"
    return f"ip:{host}"


def _owner(family: int, peer: tuple[str, int], here: tuple[str, int]) -> int | None:
    """The user id of the socket at ``peer`` connected to ``here``, from the kernel's table.

    The table is read again only when it does not list the connection yet: a flood of
    connections accepted one by one costs one read, not one each (each read is of every
    socket on the machine). An entry serves once: a later connection from the same
    port, maybe another user's, is looked up afresh.
    """
    wanted = (_hex(family, *peer), _hex(family, *here))
    owners = _read.get(family, {})
    if wanted not in owners:
        owners = _read[family] = _table(family)
    return owners.pop(wanted, None)


_read: dict[int, dict[tuple[str, str], int]] = {}
"""The kernel's table as last read, by address family: (local, remote) -> user id."""


def _table(family: int) -> dict[tuple[str, str], int]:
    table = TABLES.get(family)
    if table is None:
        return {}
    try:
        lines = table.read_text().splitlines()[1:]
    except OSError:
        return {}
    return {(f[1], f[2]): int(f[7]) for f in map(str.split, lines)}


def _hex(family: int, host: str, port: int) -> str:
    """``host:port`` as the kernel's table writes it (each 32-bit word little-endian)."""
    packed = socket.inet_pton(family, host)
    words = [packed[i : i + 4][::-1].hex().upper() for i in range(0, len(packed), 4)]
    return f"{''.join(words)}:{port:04X}"
