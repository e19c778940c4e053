"""State in Redis: a hash per task, staged changes beside it, one signed marker per topology.

Keys, for a topology under ``{prefix}`` (``key_prefix``, then the topology's name):

- ``{prefix}:committed``: the marker, the commit of the whole topology: a signed record
  of the last committed txid and its sources;
- ``{prefix}:{task}``: the task's committed data, one field per key;
- ``{prefix}:{task}:txid``: the task's signed record: the txid its data is as of, and the
  XOR of its entries' tags (:meth:`Signer.tag`), so an entry changed, dropped, added or
  put back from an earlier checkpoint is refused at the next load;
- ``{prefix}:{task}:staged:{txid}`` and the set ``{prefix}:{task}:staged``: changes
  staged under a txid, with a signed field of their own tags.

Every pickle is signed for its place (the hash, and the field for a value), so a value
copied to another field, task or topology is refused. JSON state (readable in Redis) is
not signed value by value, but the tags cover it as they cover pickles.
"""

from __future__ import annotations

import hmac
import json
import math
from collections.abc import Callable
from typing import Any

from sparkstorm.state.codec import Codec
from sparkstorm.state.signing import (
    MAC_BYTES,
    MAGIC,
    NO_TAGS,
    Signer,
    UnsignedState,
    older_state,
    xor,
)
from sparkstorm.state.stores import DELETED, Changes, Sources, apply


def redis_client(config: dict[str, Any], wait: float) -> Any:
    """A Redis client for the provider ``config``; a call retries for about ``wait`` s.

    Redis restarted mid-run is waited for (redis-py's retry, backing off from 50 ms to
    1 s) for ``retry_secs`` (default ``wait``); every call the stores make is idempotent
    (a MULTI/EXEC sent again writes the same), so a retried one cannot count twice.
    """
    import redis
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    from sparkstorm.urls import checked_url

    url = checked_url(
        "the redis state provider",
        config.get("url", "redis://127.0.0.1:6379/0"),
        ("redis", "rediss", "unix"),
        "redis://127.0.0.1:6379/0",
    )
    secs = float(config.get("retry_secs", wait)) if wait else 0.0
    retries = 0 if secs <= 0 else 4 + math.ceil(secs)  # 0.05+0.1+0.2+0.4+0.8, then 1 s each
    retry = Retry(ExponentialBackoff(cap=1.0, base=0.05), retries)
    return redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5, retry=retry)


TAGS_FIELD = b"\x00tags"
"""A staged hash's signed record of its entries' tags (no key either codec writes starts so)."""


class RedisStore:
    """State in Redis: a hash per task, staged changes beside it, one marker per topology."""

    durable = True
    _TOMBSTONE = b""  # neither serializer ever writes an empty value

    RETRY_SECS = 30.0
    """How long a call waits for Redis to come back by default (``retry_secs``)."""

    def __init__(self, config: dict[str, Any], topology: str, *, patient: bool = True) -> None:
        self.client = redis_client(config, self.RETRY_SECS if patient else 0.0)
        self.topology = topology
        self.prefix = f"{config.get('key_prefix', 'sparkstorm:state')}:{topology}"
        self.signer = Signer.of(config)
        self.codec = Codec(config.get("serializer", "pickle"), self.signer, topology)
        self._marker_key = f"{self.prefix}:committed"

    def _key(self, task: str) -> str:
        return f"{self.prefix}:{task}"

    # -- signed records ---------------------------------------------------------------
    def _record(self, raw: bytes | None, key: str, what: str) -> dict[str, Any] | None:
        """A signed JSON record (the marker, a task's txid); None when there is none yet."""
        if raw is None:
            return None
        where = f"{what} (Redis key {key})"
        if raw.isdigit():  # an earlier sparkstorm wrote the bare txid
            raise older_state(where, self.topology)
        record: dict[str, Any] = json.loads(self.signer.verify(raw, where, (key,), self.topology))
        return record

    def _signed_record(self, key: str, record: dict[str, Any]) -> bytes:
        return self.signer.sign(json.dumps(record, sort_keys=True).encode(), (key,))

    def _marker(self, raw: bytes | None) -> tuple[int, Sources]:
        record = self._record(raw, self._marker_key, "the topology's commit marker")
        return (-1, {}) if record is None else (int(record["txid"]), record["sources"])

    def _task_record(self, raw: bytes | None, key: str) -> tuple[int, bytes]:
        record = self._record(raw, f"{key}:txid", "a task's committed txid")
        return (-1, NO_TAGS) if record is None else (record["txid"], bytes.fromhex(record["tags"]))

    def _tag(self, name: str, field: bytes, value: bytes) -> bytes:
        """An entry's tag: a signed value's own MAC (bound to this field), else an HMAC.

        A MAC taken unchecked from a forged value cannot help its forger: the record's
        tags then match no set of entries signed here, and the next load refuses.
        """
        if not self.codec.json and value[: len(MAGIC)] == MAGIC:
            return value[len(MAGIC) : len(MAGIC) + MAC_BYTES]
        return self.signer.tag((name, field), value)

    def _tags(self, name: str, raw: dict[bytes, bytes]) -> bytes:
        tags = 0
        for field, value in raw.items():
            tags ^= int.from_bytes(self._tag(name, field, value), "big")
        return tags.to_bytes(MAC_BYTES, "big")

    # -- the marker -------------------------------------------------------------------
    def committed_txid(self) -> int:
        """The last committed checkpoint (-1 before the first)."""
        return self._marker(self.client.get(self._marker_key))[0]

    def mark_committed(self, txid: int, sources: Sources | None = None) -> None:
        """Commit ``txid`` for the topology: the marker and its sources in one write."""
        record = {"txid": txid, "sources": sources or {}}
        self.client.set(self._marker_key, self._signed_record(self._marker_key, record))

    def committed_sources(self) -> Sources:
        """The sources recorded with the last commit."""
        return self._marker(self.client.get(self._marker_key))[1]

    # -- a task's state ---------------------------------------------------------------
    def load(self, task: str) -> tuple[int, dict[Any, Any]]:
        """The task's committed (txid, data), rolled forward to the marker."""
        txid, data, later = self._committed(task)
        for committed, changes in later:  # committed, not yet folded: fold them now
            self.commit(task, committed, changes, dict)
            apply(data, changes)
            txid = committed
        return txid, data

    def read(self, task: str) -> tuple[int, dict[Any, Any]]:
        """What :meth:`load` gives, without writing: staged commits applied in memory."""
        txid, data, later = self._committed(task)
        for committed, changes in later:
            apply(data, changes)
            txid = committed
        return txid, data

    def tasks(self) -> list[str]:
        """The tasks with state here: each has a txid once it folded, a staged set before."""
        found = set()
        for raw in self.client.scan_iter(match=f"{self.prefix}:*", count=1000):
            key = raw.decode() if isinstance(raw, bytes) else str(raw)
            for suffix in (":txid", ":staged"):
                if key.endswith(suffix) and not key.endswith(":committed" + suffix):
                    found.add(key[len(self.prefix) + 1 : -len(suffix)])
        return sorted(found)

    def _committed(self, task: str) -> tuple[int, dict[Any, Any], list[tuple[int, Changes]]]:
        """The task's folded (txid, data), checked whole, and the changes committed since.

        The marker, the record and the data are read in one transaction, so a task that
        commits meanwhile is seen before or after, never half-way.
        """
        key = self._key(task)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.get(self._marker_key)
            pipe.get(f"{key}:txid")
            pipe.hgetall(key)
            pipe.smembers(f"{key}:staged")
            marker_raw, record_raw, raw, staged = pipe.execute()
        marker = self._marker(marker_raw)[0]
        txid, tags = self._task_record(record_raw, key)
        if txid > marker:
            msg = (
                f"Redis hash {key} is as of checkpoint {txid}, after the topology's commit "
                f"marker ({marker}): the marker was put back to an earlier one, so it was "
                "not loaded (docs/security.md)"
            )
            raise UnsignedState(msg)
        where = f"Redis hash {key}"
        if not hmac.compare_digest(self._tags(key, raw), tags):
            raise UnsignedState(_not_whole(where, txid))
        data = {
            self.codec.loads(k, where, (key,)): self.codec.loads(v, where, (key, k))
            for k, v in raw.items()
        }
        later = [
            (committed, self._staged(key, committed))
            for committed in sorted(int(t) for t in staged)
            if txid < committed <= marker
        ]
        return txid, data, later

    def _staged(self, key: str, txid: int) -> Changes:
        name = f"{key}:staged:{txid}"
        raw = self.client.hgetall(name)
        where = f"Redis hash {name}"
        seal = raw.pop(TAGS_FIELD, None)
        signed = seal is not None and self.signer.verify(seal, where, (name,), self.topology)
        if not signed or not hmac.compare_digest(self._tags(name, raw), signed):
            raise UnsignedState(_not_whole(where, txid))
        return {
            self.codec.loads(k, where, (name,)): (
                DELETED if v == self._TOMBSTONE else self.codec.loads(v, where, (name, k))
            )
            for k, v in raw.items()
        }

    def _fields(self, name: str, changes: Changes) -> tuple[dict[bytes, bytes], list[bytes]]:
        """``changes`` as the fields of hash ``name``: (puts, deletes), each signed for it."""
        puts, deletes = {}, []
        for k, v in changes.items():
            field = self.codec.dumps(k, (name,))
            if v is DELETED:
                deletes.append(field)
            else:
                puts[field] = self.codec.dumps(v, (name, field))
        return puts, deletes

    def stage(self, task: str, txid: int, changes: Changes) -> None:
        """Keep ``changes`` under ``txid`` until the marker reaches it."""
        key = self._key(task)
        name = f"{key}:staged:{txid}"
        puts, deletes = self._fields(name, changes)
        fields = {**puts, **dict.fromkeys(deletes, self._TOMBSTONE)}
        fields[TAGS_FIELD] = self.signer.sign(self._tags(name, fields), (name,))
        with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(name)  # what a crashed run staged under this id
            pipe.hset(name, mapping=fields)
            pipe.sadd(f"{key}:staged", txid)
            pipe.execute()

    def commit(
        self, task: str, txid: int, changes: Changes, data: Callable[[], dict[Any, Any]]
    ) -> None:
        """Fold what was staged under ``txid`` into the committed data and the task's record.

        The record's tags change by what each changed field held and now holds, so the
        old values are read first (one round trip; the task is the hash's only writer).
        """
        key = self._key(task)
        puts, deletes = self._fields(key, changes)
        changed = [*puts, *deletes]
        with self.client.pipeline(transaction=False) as pipe:
            pipe.get(f"{key}:txid")
            if changed:
                pipe.hmget(key, changed)
            record_raw, *olds = pipe.execute()
        folded, tags = self._task_record(record_raw, key)
        with self.client.pipeline(transaction=True) as pipe:
            if folded < txid:  # else folded already (a call sent again): only the cleaning
                for field, old in zip(changed, olds[0] if olds else [], strict=True):
                    if old is not None:
                        tags = xor(tags, self._tag(key, field, old))
                tags = xor(tags, self._tags(key, puts))
                if puts:
                    pipe.hset(key, mapping=puts)
                if deletes:
                    pipe.hdel(key, *deletes)
                record = {"txid": txid, "tags": tags.hex()}
                pipe.set(f"{key}:txid", self._signed_record(f"{key}:txid", record))
            pipe.delete(f"{key}:staged:{txid}")
            pipe.srem(f"{key}:staged", txid)
            pipe.execute()

    # -- signing again what an earlier sparkstorm wrote -------------------------------
    def resign(self) -> int:
        """Sign again, for this version, what an earlier sparkstorm wrote; how many tasks.

        Every value is checked with the earlier signature (and this secret) before it is
        loaded; a task or marker already in this version's form is left as it is, so a
        resign cut short can be run again.
        """
        done = 0
        for task in self.tasks():
            key = self._key(task)
            own = self.client.get(f"{key}:txid")
            if own is not None and not own.isdigit():
                continue
            where = f"Redis hash {key}"
            data = {
                self.codec.loads_older(k, where): self.codec.loads_older(v, where)
                for k, v in self.client.hgetall(key).items()
            }
            for staged in sorted(int(t) for t in self.client.smembers(f"{key}:staged")):
                raw = self.client.hgetall(f"{key}:staged:{staged}")
                at = f"Redis hash {key}:staged:{staged}"
                changes = {
                    self.codec.loads_older(k, at): (
                        DELETED if v == self._TOMBSTONE else self.codec.loads_older(v, at)
                    )
                    for k, v in raw.items()
                }
                self.stage(task, staged, changes)
            puts, _ = self._fields(key, data)
            record = {"txid": -1 if own is None else int(own), "tags": self._tags(key, puts).hex()}
            with self.client.pipeline(transaction=True) as pipe:
                pipe.delete(key)
                if puts:
                    pipe.hset(key, mapping=puts)
                if own is not None:
                    pipe.set(f"{key}:txid", self._signed_record(f"{key}:txid", record))
                pipe.execute()
            done += 1
        marker = self.client.get(self._marker_key)
        if marker is not None and marker.isdigit():
            sources = self.client.get(f"{self._marker_key}:sources")
            self.mark_committed(int(marker), json.loads(sources) if sources else {})
            self.client.delete(f"{self._marker_key}:sources")
        return done

    def close(self) -> None:
        """Close the client."""
        self.client.close()


def _not_whole(where: str, txid: int) -> str:
    return (
        f"{where} is not what its task committed (checkpoint {txid}): an entry was changed, "
        "added, removed or put back from an earlier checkpoint by someone without this "
        "deployment's state secret, so it was not loaded (docs/security.md)"
    )
