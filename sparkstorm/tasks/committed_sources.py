"""Exactly-once through a crash in the commit's window: each checkpoint's source keys.

A checkpoint's marker is written before its trees complete and their spouts ack the
messages to the source. A driver that dies in between leaves committed state that
already counts messages the source will deliver again. So the marker also records the
keys (:meth:`Spout.message_key`) of the messages the checkpoint completes; a restarted
run loads them, and when one of its spouts emits such a message again, the spout task
acks it at once instead of sending it on (counted as ``skipped_committed``).

A restarted run carries the keys it loaded into its own markers until each has been
seen again and one more checkpoint has committed after that (its ack is then out), or
until ``topology.message.timeout.secs`` of topology time have passed: a message whose
ack did reach the source before the crash never comes back, and by then every message
the source held unacked has been delivered again.
"""

from __future__ import annotations

from typing import Any

from sparkstorm._types import MsgId
from sparkstorm.state.stores import Sources


class CommittedSources:
    """The source keys of the checkpoint being committed, and those a restart must skip."""

    def __init__(self, loaded: Sources, carry_secs: float) -> None:
        self.skip: dict[str, set[Any]] = {c: set(keys) for c, keys in loaded.items() if keys}
        """Spout component -> keys committed by the run before, not seen again yet."""
        self._seen: dict[str, set[Any]] = {}  # skipped since the last commit
        self._carry_secs = carry_secs

    def skips(self, component: str, key: str | int | None) -> bool:
        """Whether a message emitted again with ``key`` is already in committed state."""
        keys = self.skip.get(component)
        if key is None or not keys or key not in keys:
            return False
        keys.discard(key)
        self._seen.setdefault(component, set()).add(key)
        return True

    def commit(self, sealed: Sources, now: float) -> Sources:
        """The keys to record with the commit: the trees it completes, and those carried.

        ``sealed`` holds the keys of the trees it completes: those the spout tasks sealed
        at the prepare (see :func:`sealed_keys`; a failure since would have rolled back).
        """
        sources: dict[str, list[Any]] = {c: list(keys) for c, keys in sealed.items()}
        if now >= self._carry_secs:
            for unseen in self.skip.values():
                unseen.clear()  # the sets stay shared with the spout tasks
        for carried in (self.skip, self._seen):
            for component, carried_keys in carried.items():
                sources.setdefault(component, []).extend(carried_keys)
        self._seen = {}
        return {component: keys for component, keys in sources.items() if keys}


def sealed_keys(spouts: list[Any]) -> Sources:
    """The message keys of the trees ``spouts`` (spout tasks) sealed and still hold."""
    sources: dict[str, list[Any]] = {}
    for task in spouts:
        keys = sources.setdefault(task.component_id, [])
        for root in task.sealed:
            entry = task.pending.get(root)
            if entry is not None:
                key = task.message_key(entry[0])
                if key is not None:
                    keys.append(key)
    return sources


def message_key_of(spout: Any, msg_id: MsgId) -> str | int | None:
    """``spout.message_key(msg_id)``, checked to be a key a marker can record."""
    key = spout.message_key(msg_id)
    if key is None or isinstance(key, (str, int)):
        return key
    msg = (
        f"{type(spout).__name__}.message_key({msg_id!r}) returned {key!r}; "
        "return a str, an int or None"
    )
    raise TypeError(msg)
