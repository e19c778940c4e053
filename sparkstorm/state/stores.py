"""Where stateful bolts' state is kept: Storm's state providers, as stores.

A checkpoint is a two-phase commit over every stateful task, at one superstep
boundary. Each task *stages* the keys it changed since its last checkpoint under the
checkpoint's transaction id (``stage``); once every task has staged, the driver writes
one *marker*, the last committed transaction id, for the whole topology
(``mark_committed``): that single write is the commit. The marker also records the
*sources* of the checkpoint: the keys of the spout messages whose trees it completes, so
a driver that dies before the spouts have acked them can skip them when they come again.
Each task then folds what it staged into its committed data (``commit``). Loading a
task's state rolls forward whatever was staged at or below the marker and ignores
anything above it, so a crash anywhere leaves either the old checkpoint or the new one,
never half of one.

Stores:

- ``memory``: nothing leaves the process (a task's committed state travels in its
  snapshot on Spark). For tests; lost with a driver or an executor.
- ``redis``: a hash per task, ``{prefix}:{topology}:{component}:{task}``; staged
  changes in ``...:staged:{txid}``; a commit is one MULTI/EXEC transaction.
- ``directory``: a local path or a URI (``file://``, ``hdfs://``, ...) opened with
  ``pyarrow.fs``; a directory per task holding a full ``base-{txid}`` and the
  ``delta-{txid}`` files after it; the marker is a ``COMMITTED-{txid}`` file. A base is
  rewritten only when the deltas since the last one outweigh it, so a checkpoint costs
  what changed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import pickle
import re
import uuid
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlparse

from pyarrow.fs import FileSelector, FileSystem, LocalFileSystem

from sparkstorm.config import provider_name
from sparkstorm.state.signing import Signer
from sparkstorm.topology.shared_resources import shared_resource
from sparkstorm.urls import redacted


class _Deleted:
    """The type of :data:`DELETED`; it pickles as a reference, so it stays one object."""

    def __reduce__(self) -> str:
        return "DELETED"

    def __repr__(self) -> str:
        return "DELETED"


DELETED: Any = _Deleted()
"""Marks a key deleted in a set of changes (in snapshots and delta files too)."""

Changes = dict[Any, Any]
"""Key -> new value, or :data:`DELETED`."""

Sources = dict[str, list[Any]]
"""Spout component -> keys (``Spout.message_key``) of the messages a checkpoint committed."""


class Store(Protocol):
    """One topology's state in one store: per-task data and the topology's marker."""

    durable: bool
    """Whether committed state survives the process (else it travels in snapshots)."""

    def committed_txid(self) -> int:
        """The topology's last committed transaction id (-1 before the first)."""

    def mark_committed(self, txid: int, sources: Sources | None = None) -> None:
        """Commit ``txid`` for the whole topology, with its ``sources`` (one atomic write)."""

    def committed_sources(self) -> Sources:
        """The sources recorded with the last commit."""

    def load(self, task: str) -> tuple[int, dict[Any, Any]]:
        """A task's committed (txid, data), rolled forward to the marker."""

    def tasks(self) -> list[str]:
        """The tasks (``component:task``, ``...:windows``) with state in the store."""

    def read(self, task: str) -> tuple[int, dict[Any, Any]]:
        """What :meth:`load` gives, without writing anything (for readers outside a run)."""

    def stage(self, task: str, txid: int, changes: Changes) -> None:
        """Keep ``changes`` durably under ``txid``, invisible until the marker reaches it."""

    def commit(
        self, task: str, txid: int, changes: Changes, data: Callable[[], dict[Any, Any]]
    ) -> None:
        """Fold the changes staged under ``txid`` into the task's committed data.

        ``data`` gives the task's whole committed data after them, for a store that
        rewrites it now and then.
        """


def open_store(provider: str, config: dict[str, Any], topology: str) -> Store:
    """The process's store for ``topology`` (one per process, as a shared resource)."""
    name = provider_name(provider)
    key = ("sparkstorm.state", name, json.dumps(config, sort_keys=True), topology)
    factories: dict[str, Callable[[], Store]] = {
        "memory": lambda: MemoryStore(),
        "redis": lambda: RedisStore(config, topology),
        "directory": lambda: DirectoryStore(config, topology),
    }
    return shared_resource(key, factories[name])


_PASSWORD = re.compile(r"(\w+://[^:/@\s]*:)[^@\s]+@")
"""A URL's password in a text (an error message may quote the URL it failed on)."""


def unreachable(provider: str, config: dict[str, Any], error: BaseException) -> str:
    """One line: which store could not be opened, where (password masked), what to check."""
    where = config.get("url") or config.get("path") or ""
    shown = f" at {redacted(str(where))}" if where else ""
    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    masked = _PASSWORD.sub(r"\1***@", first)[:300]
    return (
        f"state provider {provider!r}{shown} cannot be used: {type(error).__name__}: "
        f"{masked}; check topology.state.provider.config (and that the store is up)"
    )


def unstorable(
    entries: dict[Any, Any], dumps: Callable[[Any], bytes]
) -> tuple[Any, Any, Exception] | None:
    """The first (key, item, error) of ``entries`` whose key or value ``dumps`` refuses."""
    for key, value in entries.items():
        for item in (key, value):
            if item is DELETED:
                continue
            try:
                dumps(item)
            except Exception as exc:
                return key, item, exc
    return None


def store_dumps(store: Store) -> Callable[[Any], bytes]:
    """How ``store`` serializes a key or a value."""
    codec = getattr(store, "codec", None)
    if codec is not None:
        return codec.dumps  # type: ignore[no-any-return]
    return lambda value: pickle.dumps(value, protocol=5)


def unstorable_message(where: str, serializer: str, found: tuple[Any, Any, Exception]) -> str:
    """One line: which task, key and value type cannot be stored, and what to do instead."""
    component, _, task = where.partition(":")
    key, item, error = found
    what = "key" if item is key else f"value of key {key!r}"
    return (
        f"bolt {component!r} (task {task}): state {what} is a {_type_name(item)}, which "
        f"the {serializer} serializer cannot store "
        f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}); "
        f"put plain data (numbers, strings, lists, dicts, dataclasses) in KeyValueState, "
        f"and keep clients, locks and files in attributes made in prepare()"
    )


def _type_name(item: Any) -> str:
    kind = type(item)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def serializer_of(store: Store) -> str:
    """The name of the serializer ``store`` writes with."""
    codec = getattr(store, "codec", None)
    return "json" if codec is not None and codec.json else "pickle"


def apply(data: dict[Any, Any], changes: Changes) -> None:
    """Apply ``changes`` to ``data`` in place."""
    for key, value in changes.items():
        if value is DELETED:
            data.pop(key, None)
        else:
            data[key] = value


class MemoryStore:
    """The marker only: each task's committed state stays in its own state object."""

    durable = False

    def __init__(self) -> None:
        self._txid = -1
        self._sources: Sources = {}

    def committed_txid(self) -> int:
        """The last committed checkpoint (-1 before the first)."""
        return self._txid

    def mark_committed(self, txid: int, sources: Sources | None = None) -> None:
        """Commit ``txid`` for the topology."""
        self._txid, self._sources = txid, sources or {}

    def committed_sources(self) -> Sources:
        """The sources recorded with the last commit."""
        return self._sources

    def load(self, task: str) -> tuple[int, dict[Any, Any]]:
        """The task's committed (txid, data), rolled forward to the marker."""
        return -1, {}

    def tasks(self) -> list[str]:
        """None: each task's state lives in its own process."""
        return []

    def read(self, task: str) -> tuple[int, dict[Any, Any]]:
        """Nothing: each task's state lives in its own process."""
        return -1, {}

    def stage(self, task: str, txid: int, changes: Changes) -> None:
        """Keep ``changes`` under ``txid`` until the marker reaches it."""

    def commit(
        self, task: str, txid: int, changes: Changes, data: Callable[[], dict[Any, Any]]
    ) -> None:
        """Fold what was staged under ``txid`` into the committed data."""


class _Codec:
    """Keys and values as bytes: signed pickle (any value) or JSON (readable in the store)."""

    def __init__(self, serializer: str, signer: Signer) -> None:
        if serializer not in ("pickle", "json"):
            msg = f"state provider config 'serializer' is {serializer!r}; use 'pickle' or 'json'"
            raise ValueError(msg)
        self.json = serializer == "json"
        self.signer = signer

    def dumps(self, value: Any) -> bytes:
        if self.json:
            return json.dumps(value, sort_keys=True).encode()
        return self.signer.sign(pickle.dumps(value, protocol=5))

    def loads(self, data: Any, where: str) -> Any:
        """``data`` decoded; a pickle only once its signature matched (``where`` names it)."""
        return json.loads(data) if self.json else pickle.loads(self.signer.verify(data, where))


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


def probe(provider: str, config: dict[str, Any]) -> None:
    """Reach ``provider``'s store once, at once (a run's start: a store down is an error)."""
    if provider_name(provider) == "redis":
        client = redis_client(config, 0.0)
        try:
            client.ping()
        finally:
            client.close()


class RedisStore:
    """State in Redis: a hash per task, staged changes beside it, one marker per topology."""

    durable = True
    _TOMBSTONE = b""  # neither serializer ever writes an empty value

    RETRY_SECS = 30.0
    """How long a call waits for Redis to come back by default (``retry_secs``)."""

    def __init__(self, config: dict[str, Any], topology: str, *, patient: bool = True) -> None:
        self.client = redis_client(config, self.RETRY_SECS if patient else 0.0)
        self.prefix = f"{config.get('key_prefix', 'sparkstorm:state')}:{topology}"
        self.codec = _Codec(config.get("serializer", "pickle"), Signer.of(config))

    def _key(self, task: str) -> str:
        return f"{self.prefix}:{task}"

    def committed_txid(self) -> int:
        """The last committed checkpoint (-1 before the first)."""
        value = self.client.get(f"{self.prefix}:committed")
        return -1 if value is None else int(value)

    def mark_committed(self, txid: int, sources: Sources | None = None) -> None:
        """Commit ``txid`` for the topology: the marker and its sources in one transaction."""
        with self.client.pipeline(transaction=True) as pipe:
            pipe.set(f"{self.prefix}:committed", txid)
            pipe.set(f"{self.prefix}:committed:sources", json.dumps(sources or {}))
            pipe.execute()

    def committed_sources(self) -> Sources:
        """The sources recorded with the last commit."""
        value = self.client.get(f"{self.prefix}:committed:sources")
        return {} if value is None else json.loads(value)

    def load(self, task: str) -> tuple[int, dict[Any, Any]]:
        """The task's committed (txid, data), rolled forward to the marker."""
        txid, later = self._committed_since(task)
        for committed, changes in later:  # committed, not yet folded: fold them now
            self.commit(task, committed, changes, dict)
            txid = committed
        return txid, self._data(task)

    def read(self, task: str) -> tuple[int, dict[Any, Any]]:
        """What :meth:`load` gives, without writing: staged commits applied in memory."""
        txid, later = self._committed_since(task)
        data = self._data(task)
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

    def _committed_since(self, task: str) -> tuple[int, list[tuple[int, Changes]]]:
        """The task's folded txid, and the changes staged after it that the marker commits."""
        key, marker = self._key(task), self.committed_txid()
        own = self.client.get(f"{key}:txid")
        txid = -1 if own is None else int(own)
        staged = sorted(int(t) for t in self.client.smembers(f"{key}:staged"))
        later = []
        for committed in [t for t in staged if txid < t <= marker]:
            where = f"a field of Redis hash {key}:staged:{committed}"
            raw = self.client.hgetall(f"{key}:staged:{committed}")
            changes = {
                self.codec.loads(k, where): (
                    DELETED if v == self._TOMBSTONE else self.codec.loads(v, where)
                )
                for k, v in raw.items()
            }
            later.append((committed, changes))
        return txid, later

    def _data(self, task: str) -> dict[Any, Any]:
        key = self._key(task)
        raw, where = self.client.hgetall(key), f"a field of Redis hash {key}"
        return {self.codec.loads(k, where): self.codec.loads(v, where) for k, v in raw.items()}

    def stage(self, task: str, txid: int, changes: Changes) -> None:
        """Keep ``changes`` under ``txid`` until the marker reaches it."""
        key = self._key(task)
        fields: dict[Any, Any] = {
            self.codec.dumps(k): self._TOMBSTONE if v is DELETED else self.codec.dumps(v)
            for k, v in changes.items()
        }
        with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(f"{key}:staged:{txid}")  # what a crashed run staged under this id
            if fields:
                pipe.hset(f"{key}:staged:{txid}", mapping=fields)
            pipe.sadd(f"{key}:staged", txid)
            pipe.execute()

    def commit(
        self, task: str, txid: int, changes: Changes, data: Callable[[], dict[Any, Any]]
    ) -> None:
        """Fold what was staged under ``txid`` into the committed data."""
        key = self._key(task)
        puts: dict[Any, Any] = {
            self.codec.dumps(k): self.codec.dumps(v) for k, v in changes.items() if v is not DELETED
        }
        deletes = [self.codec.dumps(k) for k, v in changes.items() if v is DELETED]
        with self.client.pipeline(transaction=True) as pipe:
            if puts:
                pipe.hset(key, mapping=puts)
            if deletes:
                pipe.hdel(key, *deletes)
            pipe.set(f"{key}:txid", txid)
            pipe.delete(f"{key}:staged:{txid}")
            pipe.srem(f"{key}:staged", txid)
            pipe.execute()

    def close(self) -> None:
        """Close the client."""
        self.client.close()


class DirectoryStore:
    """State in a directory on any file system pyarrow opens: base and delta files per task.

    Every file is written under a temporary name and moved to a name nothing else uses,
    so a reader sees a whole file or none on a local disk and on HDFS, whose rename never
    replaces an existing file; the marker is a new ``COMMITTED-{txid}`` file each time.
    """

    durable = True

    def __init__(
        self,
        config: dict[str, Any],
        topology: str,
        filesystem: FileSystem | None = None,
        *,
        create: bool = True,
    ) -> None:
        path = config.get("path")
        if not path:
            msg = (
                "the 'directory' state provider needs a path: set "
                'topology.state.provider.config to {"path": "/some/dir"} (or a URI such as '
                '"hdfs://namenode:8020/some/dir")'
            )
            raise ValueError(msg)
        self.fs, root = (filesystem, str(path)) if filesystem else _open_filesystem(str(path))
        self.root = f"{root.rstrip('/')}/{topology}"
        if create:  # a reader (``create=False``) leaves no folder behind for a wrong name
            self.fs.create_dir(self.root)
        self._sync = isinstance(self.fs, LocalFileSystem)
        self.signer = Signer.of(config)

    def _markers(self) -> dict[int, str]:
        return self._files(self.root, "COMMITTED")

    def _marker(self) -> dict[str, Any]:
        markers = self._markers()
        if not markers:
            return {"txid": -1, "sources": {}}
        marker: dict[str, Any] = json.loads(self._read(markers[max(markers)]))
        return marker

    def committed_txid(self) -> int:
        """The last committed checkpoint (-1 before the first)."""
        return int(self._marker()["txid"])

    def mark_committed(self, txid: int, sources: Sources | None = None) -> None:
        """Commit ``txid`` for the topology: a new marker file, with its sources."""
        marker = {"txid": txid, "sources": sources or {}}
        self._write(f"{self.root}/COMMITTED-{txid}", json.dumps(marker).encode())
        for older, file in self._markers().items():
            if older < txid:
                self._delete(file)

    def committed_sources(self) -> Sources:
        """The sources recorded with the last commit."""
        sources: Sources = self._marker().get("sources", {})
        return sources

    def _dir(self, task: str) -> str:
        path = f"{self.root}/{task.replace(':', '/')}"
        self.fs.create_dir(path)
        return path

    def _files(self, path: str, kind: str) -> dict[int, str]:
        found = self.fs.get_file_info(FileSelector(path, allow_not_found=True))
        return {
            int(info.base_name.split("-")[1]): info.path
            for info in found
            if info.base_name.startswith(f"{kind}-") and not info.base_name.endswith("~")
        }

    def _sizes(self, files: list[str]) -> int:
        return sum(info.size or 0 for info in self.fs.get_file_info(files))

    def load(self, task: str) -> tuple[int, dict[Any, Any]]:
        """The task's committed (txid, data), rolled forward to the marker."""
        self._dir(task)
        return self.read(task)

    def tasks(self) -> list[str]:
        """The tasks with state here: the folders holding base or delta files."""
        selector = FileSelector(self.root, allow_not_found=True, recursive=True)
        found = set()
        for info in self.fs.get_file_info(selector):
            if info.base_name.startswith(("base-", "delta-")) and not info.base_name.endswith("~"):
                folder = info.path.rsplit("/", 1)[0]
                found.add(folder[len(self.root) + 1 :].replace("/", ":"))
        return sorted(found)

    def read(self, task: str) -> tuple[int, dict[Any, Any]]:
        """The task's committed (txid, data), rolled forward to the marker; writes nothing."""
        path, marker = f"{self.root}/{task.replace(':', '/')}", self.committed_txid()
        bases = {t: f for t, f in self._files(path, "base").items() if t <= marker}
        txid = max(bases, default=-1)
        data: dict[Any, Any] = self._load(bases[txid]) if bases else {}
        for later, file in sorted(self._files(path, "delta").items()):
            if txid < later <= marker:
                apply(data, self._load(file))
                txid = later
        return txid, data

    def stage(self, task: str, txid: int, changes: Changes) -> None:
        """Keep ``changes`` under ``txid`` until the marker reaches it."""
        file = f"{self._dir(task)}/delta-{txid}"
        self._delete(file)  # what a crashed run staged under this id, above the marker
        self._write(file, self.signer.sign(pickle.dumps(changes, protocol=5)))

    def commit(
        self, task: str, txid: int, changes: Changes, data: Callable[[], dict[Any, Any]]
    ) -> None:
        """Nothing to fold (the marker decided); rewrite the base when deltas outweigh it."""
        path = self._dir(task)
        bases, deltas = self._files(path, "base"), self._files(path, "delta")
        newest = max(bases, default=-1)
        base = self._sizes([bases[newest]]) if bases else 0
        since = self._sizes([f for t, f in deltas.items() if t > newest])
        if since <= max(base, 1 << 20) or txid in bases:  # a base once written is never replaced
            return
        self._write(f"{path}/base-{txid}", self.signer.sign(pickle.dumps(data(), protocol=5)))
        for kind, files in (("base", bases), ("delta", deltas)):
            for older, file in files.items():
                if older < txid or (kind == "delta" and older == txid):
                    self._delete(file)

    def _load(self, path: str) -> Any:
        """A base or delta file's contents, once its signature matched."""
        return pickle.loads(self.signer.verify(self._read(path), f"state file {path}"))

    def _read(self, path: str) -> bytes:
        with self.fs.open_input_stream(path) as stream:
            data: bytes = stream.read()
        return data

    def _write(self, path: str, data: bytes) -> None:
        """Write ``path`` whole or not at all: a temporary file, moved to a name not in use."""
        tmp = f"{path}.{uuid.uuid4().hex}~"
        try:
            with self.fs.open_output_stream(tmp) as stream:
                stream.write(data)
            if self._sync:  # survive a power cut too, not only a crashed process
                descriptor = os.open(tmp, os.O_RDONLY)
                try:
                    os.fsync(descriptor)
                finally:
                    os.close(descriptor)
            self.fs.move(tmp, path)
        except BaseException:
            self._delete(tmp)
            raise

    def _delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(path)


def _open_filesystem(path: str) -> tuple[FileSystem, str]:
    """The file system and the path in it that ``path`` (a local path or a URI) names."""
    if not urlparse(path).scheme:
        return LocalFileSystem(), os.path.abspath(path)
    try:
        filesystem, inside = FileSystem.from_uri(path)
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        reason = str(error).splitlines()[0]
        msg = (
            f"the 'directory' state provider cannot open {path!r}: {reason}. Use a local "
            "path, or a URI pyarrow.fs opens (file://, hdfs:// with libhdfs and the Hadoop "
            "CLASSPATH set, s3://, gs://, abfs://)"
        )
        raise ValueError(msg) from error
    return filesystem, str(inside)
