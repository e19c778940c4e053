"""Map states in PostgreSQL: transactional, opaque and non-transactional.

Layout, readable from outside: one table per state, created if missing,

    CREATE TABLE sparkstorm_trident_<name> (
        key  text PRIMARY KEY,  -- the key as a JSON list, e.g. '["the"]'
        txid bigint,            -- transactional and opaque: the batch that wrote val
        val  jsonb,             -- the value (an opaque map's current one)
        prev jsonb              -- opaque: the value before batch txid
    )

shared by the state's partitions (their keys are disjoint). A batch partition costs
one ``SELECT ... WHERE key = ANY(...)`` and one ``INSERT ... ON CONFLICT DO UPDATE``
over ``unnest`` (Storm's ``multiGet`` and ``multiPut``), each its own transaction.
Values must be JSON values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from typing_extensions import override

from sparkstorm.trident.state.base import IBackingMap, Key, State, StateFactory, StateStore
from sparkstorm.trident.state.redis import NON_TRANSACTIONAL, OPAQUE, TRANSACTIONAL, build_map
from sparkstorm.trident.state.values import OpaqueValue, TransactionalValue

_NAME = re.compile(r"^[a-z0-9_]{1,40}$")


def table_name(name: str) -> str:
    """The table of state ``name``."""
    if not _NAME.match(name):
        msg = (
            f"PostgreSQL map state name {name!r}: use 1-40 lowercase letters, digits or "
            f"underscores (it names the table sparkstorm_trident_<name>)"
        )
        raise ValueError(msg)
    return f"sparkstorm_trident_{name}"


class PostgresBackingMap(IBackingMap[Any]):
    """A PostgreSQL table as a backing map, its rows in the layout of ``kind``.

    .. versionadded:: 0.3.0
    """

    def __init__(self, dsn: str, name: str, kind: str) -> None:
        self.dsn, self.kind = dsn, kind
        self.table = table_name(name)
        self._connection: Any = None

    @property
    def connection(self) -> Any:
        """The connection, opened (and the table created) on first use."""
        if self._connection is None or self._connection.closed:
            import psycopg

            self._connection = psycopg.connect(self.dsn, autocommit=True)
            self._connection.execute(
                f"CREATE TABLE IF NOT EXISTS {self.table} "
                "(key text PRIMARY KEY, txid bigint, val jsonb, prev jsonb)"
            )
        return self._connection

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_connection": None}

    @override
    def multi_get(self, keys: list[Key]) -> list[Any]:
        if not keys:
            return []
        fields = [json.dumps(list(key)) for key in keys]
        try:
            rows = self.connection.execute(
                f"SELECT key, txid, val, prev FROM {self.table} WHERE key = ANY(%s)", (fields,)
            ).fetchall()
        except Exception:
            self._drop()
            raise
        found = {key: (txid, val, prev) for key, txid, val, prev in rows}
        return [self._value(found.get(field)) for field in fields]

    def _value(self, row: tuple[Any, Any, Any] | None) -> Any:
        if row is None:
            return None
        txid, val, prev = row
        if self.kind == TRANSACTIONAL:
            return TransactionalValue(txid, val)
        if self.kind == OPAQUE:
            return OpaqueValue(txid, val, prev)
        return val

    @override
    def multi_put(self, keys: list[Key], values: list[Any]) -> None:
        if not keys:
            return
        fields, txids, vals, prevs = [], [], [], []
        for key, value in zip(keys, values, strict=True):
            fields.append(json.dumps(list(key)))
            if self.kind == TRANSACTIONAL:
                txid, val, prev = value.txid, value.val, None
            elif self.kind == OPAQUE:
                txid, val, prev = value.curr_txid, value.curr, value.prev
            else:
                txid, val, prev = None, value, None
            txids.append(txid)
            vals.append(json.dumps(val))
            prevs.append(json.dumps(prev))
        try:
            self.connection.execute(
                f"INSERT INTO {self.table} (key, txid, val, prev) "
                "SELECT * FROM unnest(%s::text[], %s::bigint[], %s::jsonb[], %s::jsonb[]) "
                "ON CONFLICT (key) DO UPDATE SET txid = EXCLUDED.txid, val = EXCLUDED.val, "
                "prev = EXCLUDED.prev",
                (fields, txids, vals, prevs),
            )
        except Exception:
            self._drop()
            raise

    def _drop(self) -> None:
        """A failed call: the next one connects again (the server may have restarted)."""
        if self._connection is not None:
            self._connection.close()
        self._connection = None


class PostgresMapState(StateFactory):
    """Makes a PostgreSQL map state's partitions.

    Examples
    --------
    >>> dsn = "postgresql://postgres@127.0.0.1:5432/postgres"
    >>> factory = PostgresMapState.opaque(dsn, "word_counts")

    .. versionadded:: 0.3.0
    """

    def __init__(self, dsn: str, name: str, kind: str) -> None:
        table_name(name)
        if kind not in (TRANSACTIONAL, OPAQUE, NON_TRANSACTIONAL):
            msg = f"kind {kind!r}: choose {TRANSACTIONAL!r}, {OPAQUE!r} or {NON_TRANSACTIONAL!r}"
            raise ValueError(msg)
        self.dsn, self.name, self.kind = dsn, name, kind

    @classmethod
    def transactional(cls, dsn: str, name: str) -> PostgresMapState:
        """A :class:`TransactionalMap` in table ``sparkstorm_trident_<name>``."""
        return cls(dsn, name, TRANSACTIONAL)

    @classmethod
    def opaque(cls, dsn: str, name: str) -> PostgresMapState:
        """An :class:`OpaqueMap` in table ``sparkstorm_trident_<name>``."""
        return cls(dsn, name, OPAQUE)

    @classmethod
    def non_transactional(cls, dsn: str, name: str) -> PostgresMapState:
        """A :class:`NonTransactionalMap` in table ``sparkstorm_trident_<name>``."""
        return cls(dsn, name, NON_TRANSACTIONAL)

    def backing(self) -> PostgresBackingMap:
        """The table under the map state."""
        return PostgresBackingMap(self.dsn, self.name, self.kind)

    @override
    def committed_items(self) -> Iterator[tuple[list[Any], Any]]:
        import psycopg

        with psycopg.connect(self.dsn) as connection:
            table = table_name(self.name)
            found = connection.execute("SELECT to_regclass(%s)", [table]).fetchone()
            if found is None or found[0] is None:
                return  # no batch committed yet
            for key, value in connection.execute(f"SELECT key, val FROM {table} ORDER BY key"):
                yield json.loads(key), value

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
        return StateStore("postgres", {"dsn": self.dsn}, self.name)


GLOBAL_KEY = ["$POSTGRES-MAP-STATE-GLOBAL"]
"""The key of a global (ungrouped) persistent aggregate's one value."""


PROGRESS_TABLE = "sparkstorm_trident_progress"


class PostgresProgress:
    """A Trident topology's progress in PostgreSQL, beside the map states it writes.

    One row per state name in table ``sparkstorm_trident_progress``: ``name text primary
    key``, ``txid bigint`` (the last committed batch), ``sources jsonb`` (the spouts'
    metadata as of it), written whole in one statement.
    """

    def __init__(self, dsn: str, name: str) -> None:
        self.dsn, self.name = dsn, name
        self._connection: Any = None

    @property
    def connection(self) -> Any:
        """The connection, opened (and the table created) on first use."""
        if self._connection is None or self._connection.closed:
            import psycopg

            self._connection = psycopg.connect(self.dsn, autocommit=True)
            self._connection.execute(
                f"CREATE TABLE IF NOT EXISTS {PROGRESS_TABLE} "
                "(name text PRIMARY KEY, txid bigint NOT NULL, sources jsonb NOT NULL)"
            )
        return self._connection

    def _row(self) -> tuple[int, Any] | None:
        try:
            row = self.connection.execute(
                f"SELECT txid, sources FROM {PROGRESS_TABLE} WHERE name = %s", (self.name,)
            ).fetchone()
        except Exception:
            self._drop()
            raise
        return None if row is None else (int(row[0]), row[1])

    def committed_txid(self) -> int:
        """The last committed txid (-1 before the first)."""
        row = self._row()
        return -1 if row is None else row[0]

    def committed_sources(self) -> dict[str, list[Any]]:
        """The spouts' metadata written with the last commit."""
        row = self._row()
        return {} if row is None else dict(row[1])

    def mark_committed(self, txid: int, sources: dict[str, list[Any]] | None = None) -> None:
        """``txid`` committed, with the spouts' metadata, in one statement."""
        try:
            self.connection.execute(
                f"INSERT INTO {PROGRESS_TABLE} (name, txid, sources) VALUES (%s, %s, %s) "
                "ON CONFLICT (name) DO UPDATE SET txid = EXCLUDED.txid, "
                "sources = EXCLUDED.sources",
                (self.name, txid, json.dumps(sources or {})),
            )
        except Exception:
            self._drop()
            raise

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection = None
