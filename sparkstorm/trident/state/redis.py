"""Map states in Redis: transactional, opaque and non-transactional.

Layout, readable from outside: one hash per state, ``{prefix}:{name}`` (prefix
``sparkstorm:trident``), shared by the state's partitions (their keys are disjoint). A
field is the key as a JSON list (``["the"]``), a value is JSON:

- transactional: ``{"txid": 7, "val": 3}``
- opaque: ``{"txid": 7, "curr": 3, "prev": 2}``
- non-transactional: ``{"val": 3}``

A batch partition costs one ``HMGET`` and one ``HSET`` (Storm's ``multiGet`` and
``multiPut``). Values must be JSON values (numbers, strings, lists, dicts, None). A
Redis that restarts is waited for (``retry_secs``, default 30), as the checkpoint store
does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from typing_extensions import override

from sparkstorm.state.redis_store import redis_client
from sparkstorm.trident.state.base import (
    IBackingMap,
    Key,
    MapState,
    State,
    StateFactory,
    StateStore,
)
from sparkstorm.trident.state.maps import (
    NonTransactionalMap,
    OpaqueMap,
    SnapshottableMap,
    TransactionalMap,
)
from sparkstorm.trident.state.values import OpaqueValue, TransactionalValue

TRANSACTIONAL, OPAQUE, NON_TRANSACTIONAL = "transactional", "opaque", "non-transactional"
PREFIX = "sparkstorm:trident"


def _encode(kind: str, value: Any) -> dict[str, Any]:
    if kind == TRANSACTIONAL:
        return {"txid": value.txid, "val": value.val}
    if kind == OPAQUE:
        return {"txid": value.curr_txid, "curr": value.curr, "prev": value.prev}
    return {"val": value}


def _decode(kind: str, stored: dict[str, Any]) -> Any:
    if kind == TRANSACTIONAL:
        return TransactionalValue(stored["txid"], stored["val"])
    if kind == OPAQUE:
        return OpaqueValue(stored["txid"], stored["curr"], stored["prev"])
    return stored["val"]


class RedisBackingMap(IBackingMap[Any]):
    """A Redis hash as a backing map, its values in the layout of ``kind``.

    .. versionadded:: 0.3.0
    """

    def __init__(self, url: str, name: str, kind: str, retry_secs: float = 30.0) -> None:
        self.url, self.retry_secs = url, retry_secs
        self.hash = f"{PREFIX}:{name}"
        self.kind = kind
        self._client: Any = None

    @property
    def client(self) -> Any:
        """The Redis client, connected on first use (a copy of the map reconnects)."""
        if self._client is None:
            self._client = redis_client(
                {"url": self.url, "retry_secs": self.retry_secs}, self.retry_secs
            )
        return self._client

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_client": None}

    @override
    def multi_get(self, keys: list[Key]) -> list[Any]:
        if not keys:
            return []
        fields = [json.dumps(list(key)) for key in keys]
        stored = self.client.hmget(self.hash, fields)
        return [None if raw is None else _decode(self.kind, json.loads(raw)) for raw in stored]

    @override
    def multi_put(self, keys: list[Key], values: list[Any]) -> None:
        if not keys:
            return
        mapping = {}
        for key, value in zip(keys, values, strict=True):
            try:
                mapping[json.dumps(list(key))] = json.dumps(_encode(self.kind, value))
            except TypeError as exc:
                msg = (
                    f"Redis map state {self.hash!r}: key {list(key)!r} or its value {value!r} "
                    f"is not JSON ({exc}); store numbers, strings, lists or dicts"
                )
                raise TypeError(msg) from None
        self.client.hset(self.hash, mapping=mapping)


class RedisMapState(StateFactory):
    """Makes a Redis map state's partitions (Storm's ``RedisMapState.Factory``).

    Examples
    --------
    >>> factory = RedisMapState.transactional("redis://127.0.0.1:6379/0", "word-counts")

    .. versionadded:: 0.3.0
    """

    def __init__(self, url: str, name: str, kind: str, retry_secs: float = 30.0) -> None:
        if kind not in (TRANSACTIONAL, OPAQUE, NON_TRANSACTIONAL):
            msg = f"kind {kind!r}: choose {TRANSACTIONAL!r}, {OPAQUE!r} or {NON_TRANSACTIONAL!r}"
            raise ValueError(msg)
        self.url, self.name, self.kind, self.retry_secs = url, name, kind, retry_secs

    @classmethod
    def transactional(cls, url: str, name: str, retry_secs: float = 30.0) -> RedisMapState:
        """A :class:`TransactionalMap` in hash ``sparkstorm:trident:{name}``."""
        return cls(url, name, TRANSACTIONAL, retry_secs)

    @classmethod
    def opaque(cls, url: str, name: str, retry_secs: float = 30.0) -> RedisMapState:
        """An :class:`OpaqueMap` in hash ``sparkstorm:trident:{name}``."""
        return cls(url, name, OPAQUE, retry_secs)

    @classmethod
    def non_transactional(cls, url: str, name: str, retry_secs: float = 30.0) -> RedisMapState:
        """A :class:`NonTransactionalMap` in hash ``sparkstorm:trident:{name}``."""
        return cls(url, name, NON_TRANSACTIONAL, retry_secs)

    def backing(self) -> RedisBackingMap:
        """The hash under the map state."""
        return RedisBackingMap(self.url, self.name, self.kind, self.retry_secs)

    @override
    def committed_items(self) -> Iterator[tuple[list[Any], Any]]:
        current = "curr" if self.kind == OPAQUE else "val"
        for field, raw in self.backing().client.hscan_iter(f"{PREFIX}:{self.name}"):
            yield json.loads(field), json.loads(raw)[current]

    @override
    def make_state(
        self, conf: dict[str, Any], metrics: Any, partition_index: int, num_partitions: int
    ) -> State:
        return build_map(self.kind, self.backing(), GLOBAL_KEY)

    @override
    def state_type(self) -> str:
        return self.kind

    @override
    def store(self) -> StateStore:
        return StateStore("redis", {"url": self.url, "retry_secs": self.retry_secs}, self.name)


GLOBAL_KEY = ["$REDIS-MAP-STATE-GLOBAL"]
"""The key of a global (ungrouped) persistent aggregate's one value, as Storm's."""


def build_map(kind: str, backing: IBackingMap[Any], global_key: Key) -> SnapshottableMap[Any]:
    """The map state of ``kind`` over ``backing``; ``global_key`` holds a global aggregate."""
    state: MapState[Any]
    if kind == TRANSACTIONAL:
        state = TransactionalMap.build(backing)
    elif kind == OPAQUE:
        state = OpaqueMap.build(backing)
    else:
        state = NonTransactionalMap.build(backing)
    return SnapshottableMap(state, global_key)
