"""``PostgresUpsertBolt``: batched, idempotent writes to PostgreSQL, acked after commit.

Delivery guarantee: **at-least-once, idempotent**. Input tuples are buffered and written
in one transaction as upserts on ``key`` (``INSERT ... ON CONFLICT (key) DO UPDATE``), so
a replayed tuple rewrites the same row. Buffered tuples are acked only after the commit;
if the transaction fails they are all failed (their spouts replay them) and the
connection is opened again. The sink's tasks in one worker process share one connection
per DSN (:meth:`TopologyContext.shared_resource`), opened once per process.

The buffer is flushed when it holds ``batch_size`` tuples and on every tick tuple: the
bolt asks for a tick every ``flush_secs`` (its own ``topology.tick.tuple.freq.secs``),
so a partial batch never waits longer than that, and a graceful stop, which keeps
ticks coming while trees are pending, commits and acks what is buffered.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from sparkstorm.connectors.extra import missing_extra

try:
    import psycopg
    from psycopg import sql
except ModuleNotFoundError as missing:  # the connectors extra is not installed
    raise missing_extra(missing, "PostgreSQL connector") from None

from sparkstorm.connectors.batching import BatchingSink
from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.tuple import Tuple

log = logging.getLogger(__name__)


class PostgresUpsertBolt(BatchingSink):
    """Upserts ``columns`` (read from the input tuple's fields of those names) into ``table``.

    Parameters
    ----------
    dsn
        A libpq connection string, e.g. ``postgresql://postgres@127.0.0.1:5432/postgres``.
    table, columns, key
        Target table, the columns written, and the conflict key (a subset of ``columns``
        with a unique constraint).
    batch_size
        Flush when this many tuples are buffered.
    update
        SQL expressions for the update, by column (default ``EXCLUDED.<column>``); e.g.
        ``{"count": "GREATEST(t.count, EXCLUDED.count)"}`` where ``t`` names the table.
    flush_secs
        The longest a partial batch waits (the bolt's tick frequency); None: no ticks,
        a partial batch waits for the next full one or ``cleanup``.

    .. versionadded:: 0.1.0
    """

    transient: ClassVar[tuple[str, ...]] = ("connection",)
    write_errors = (psycopg.Error,)

    def __init__(
        self,
        dsn: str,
        table: str,
        columns: list[str],
        key: list[str],
        *,
        batch_size: int = 500,
        update: dict[str, str] | None = None,
        flush_secs: float | None = 1.0,
    ) -> None:
        missing = [k for k in key if k not in columns]
        if missing:
            msg = f"PostgresUpsertBolt({table!r}): key {missing} is not among columns {columns}"
            raise ValueError(msg)
        super().__init__(batch_size, flush_secs)
        self.dsn, self.table, self.columns, self.key = dsn, table, columns, key
        self.update = update or {}

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Open the connection and build the statement."""
        super().prepare(conf, context, collector)
        dsn = self.dsn
        self.connection = context.shared_resource(("postgres", dsn), lambda: SharedConnection(dsn))
        values = [c for c in self.columns if c not in self.key]
        sets = [
            sql.SQL("{} = {}").format(
                sql.Identifier(c),
                sql.SQL(self.update.get(c, "EXCLUDED." + c)),
            )
            for c in values
        ]
        self.statement = sql.SQL(
            "INSERT INTO {table} AS t ({cols}) VALUES ({params}) ON CONFLICT ({key}) "
            + ("DO UPDATE SET {sets}" if sets else "DO NOTHING")
        ).format(
            table=sql.Identifier(self.table),
            cols=sql.SQL(", ").join(map(sql.Identifier, self.columns)),
            params=sql.SQL(", ").join(sql.Placeholder() * len(self.columns)),
            key=sql.SQL(", ").join(map(sql.Identifier, self.key)),
            sets=sql.SQL(", ").join(sets),
        )

    def write(self, batch: list[Tuple]) -> None:
        """Upsert ``batch`` in one transaction."""
        rows = [[tup[c] for c in self.columns] for tup in batch]
        conn = self.connection.get()
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(self.statement, rows)

    def failed_write(self, batch: list[Tuple], error: BaseException) -> None:
        """Drop the connection: the next flush opens a new one."""
        log.warning(
            "PostgresUpsertBolt: writing %d rows to %r failed (%s); failed them",
            len(batch),
            self.table,
            error,
        )
        self.connection.discard()


class SharedConnection:
    """One PostgreSQL connection per worker process and DSN, reopened after a failure."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.opened = 0
        """How many times this process opened the connection."""
        self._conn: psycopg.Connection[Any] | None = None

    def get(self) -> psycopg.Connection[Any]:
        """The open connection, opening it first if needed."""
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.dsn)
            self.opened += 1
        return self._conn

    def discard(self) -> None:
        """Close the connection after an error; the next ``get`` opens a new one."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except psycopg.Error as exc:
                log.debug("closing a failed PostgreSQL connection: %s", exc)

    close = discard
