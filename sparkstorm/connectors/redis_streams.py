"""Redis Streams: ``RedisStreamSpout`` (at-least-once) and ``RedisHashBolt`` (idempotent).

``RedisStreamSpout`` reads a stream through a consumer group (``XREADGROUP``). An entry
stays in the group's pending entries list (PEL) until its tuple tree completes, then it
is ``XACK``-ed. A failed tree's entry is delivered again (``XCLAIM`` to the same
consumer, which raises the PEL's delivery count); once the count reaches
``max_retries`` the entry is copied to ``dead_letter_stream`` (with the count and the
last failure reason) and acked, in one transaction. A ``shutdown`` failure is not an
attempt: the entry simply stays pending for this consumer.

The consumer name is stable per spout task (``<component>-<task index>``), so a
restarted topology first reads its own pending entries again. Entries left pending by
a consumer that is gone are taken over with ``XAUTOCLAIM`` once idle for twice the
message timeout (a live consumer's tree times out and is retried before that). Every
Redis call is non-blocking: ``next_tuple`` never waits for new entries.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any, ClassVar

import redis

from sparkstorm._types import SHUTDOWN, FailReason, counts_as_attempt
from sparkstorm.config import TOPOLOGY_MESSAGE_TIMEOUT_SECS
from sparkstorm.connectors.batching import BatchingSink
from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.reliability.spout_collector import SpoutOutputCollector
from sparkstorm.topology.components import HoldsWork, Spout
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import OutputFieldsDeclarer
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.tuple import Tuple
from sparkstorm.urls import checked_url

log = logging.getLogger(__name__)

ATTEMPTS_FIELD = "x-sparkstorm-attempts"
REASON_FIELD = "x-sparkstorm-last-failure"
SOURCE_ID_FIELD = "x-sparkstorm-source-id"
READ_COUNT = 100
RECONNECT_SECS = 1.0
MAX_RECONNECT_SECS = 30.0
REDIS_SCHEMES = ("redis", "rediss", "unix")


class RedisStreamSpout(Spout, HoldsWork):
    """Reads ``stream`` as consumer group ``group``; emits ``(id, data)`` per entry.

    Parameters
    ----------
    url
        A Redis URL, e.g. ``redis://127.0.0.1:6379/0``.
    stream, group
        The stream and its consumer group (created, with the stream, if missing, reading
        from ``start_id``: ``"0"`` takes every entry already there, ``"$"`` only new ones).
    max_retries
        Deliveries after which a failing entry is dead-lettered; None: retry forever.
    dead_letter_stream
        Where entries go after ``max_retries``; needed with ``max_retries``.
    decode
        Text encoding of field names and values; None emits bytes.

    .. versionadded:: 0.1.0
    """

    def __init__(
        self,
        url: str,
        stream: str,
        group: str,
        *,
        max_retries: int | None = None,
        dead_letter_stream: str | None = None,
        start_id: str = "0",
        decode: str | None = "utf-8",
    ) -> None:
        if max_retries is not None and not dead_letter_stream:
            msg = f"RedisStreamSpout({stream!r}): max_retries needs a dead_letter_stream"
            raise ValueError(msg)
        self.url = checked_url(
            f"RedisStreamSpout({stream!r})", url, REDIS_SCHEMES, "redis://127.0.0.1:6379/0"
        )
        self.stream, self.group = stream, group
        self.max_retries, self.dead_letter_stream = max_retries, dead_letter_stream
        self.start_id, self.decode = start_id, decode

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """``id`` (the entry id) and ``data`` (its fields, a dict)."""
        declarer.declare(Fields("id", "data"))

    def open(
        self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector
    ) -> None:
        """Connect, create the group if missing, and take back this consumer's pending."""
        self.collector = collector
        self.component = context.get_this_component_id()
        self.task = context.get_this_task_id()
        index = context.get_component_tasks(self.component).index(self.task)
        self.consumer = f"{self.component}-{index}"
        self.claim_idle_ms = int(2000 * conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS])
        # redis-py types its replies for every protocol and mode at once: read them as Any
        self.client: Any = redis.Redis.from_url(
            self.url,
            socket_timeout=5,
            client_name=f"sparkstorm:{self.stream}:{self.consumer}",
            redis_connect_func=self._on_connect,
        )
        self.connections = 0
        self.reread = False
        self.buffer: deque[tuple[bytes, dict[bytes, bytes]]] = deque()
        self.in_flight: dict[bytes, dict[bytes, bytes]] = {}
        self.completed: list[bytes] = []
        """Entries whose tree completed and whose ``XACK`` has not succeeded yet."""
        self.xack_failing = False
        self.next_claim = 0.0
        self.next_attempt = 0.0
        self.backoff = RECONNECT_SECS
        self.ready = False
        self._setup()

    def _on_connect(self, connection: Any) -> None:
        """A new connection (redis-py reconnects by itself, even inside a command).

        A command whose reply was lost with the old connection may have delivered
        entries to this consumer that it never saw: read its own pending history again.
        """
        connection.on_connect()
        self.connections += 1
        self.reread = self.connections > 1

    def _where(self) -> str:
        kwargs = self.client.connection_pool.connection_kwargs
        return f"{kwargs.get('host')}:{kwargs.get('port')} db {kwargs.get('db', 0)}"

    def _setup(self) -> None:
        """Create the group if missing; read this consumer's own pending entries again."""
        try:
            try:
                self.client.xgroup_create(self.stream, self.group, self.start_id, mkstream=True)
            except redis.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
        except redis.RedisError as exc:
            self._unreachable(exc)
            return
        self._reread_history()  # first: what a previous run or connection left unacked
        self.ready = True
        self.backoff = RECONNECT_SECS

    def _reread_history(self) -> None:
        """Read this consumer's pending entries again, from the first (all of them).

        What is buffered is pending here too, so the history brings it back.
        """
        self.buffer.clear()
        self.history: bytes | str | None = "0"

    def _unreachable(self, exc: redis.RedisError) -> None:
        self.collector.report_error(
            ConnectionError(
                f"RedisStreamSpout cannot use stream {self.stream!r} at {self._where()}: "
                f"{type(exc).__name__}: {exc}; retrying in {self.backoff:g} s"
            )
        )
        self.next_attempt = time.monotonic() + self.backoff
        self.backoff = min(2 * self.backoff, MAX_RECONNECT_SECS)

    def _read(self, start: bytes | str) -> list[Any]:
        """Buffer the entries read from ``start`` and return them.

        ``">"`` reads new entries; an id reads this consumer's pending entries after it.
        Entries trimmed from the stream while pending come without fields: they are acked.
        """
        reply = self.client.xreadgroup(
            self.group, self.consumer, {self.stream: start}, count=READ_COUNT
        )
        entries = [entry for _, stream_entries in reply or () for entry in stream_entries]
        self.buffer.extend((i, f) for i, f in entries if f and i not in self.in_flight)
        trimmed = [i for i, f in entries if not f]
        if trimmed:
            self.client.xack(self.stream, self.group, *trimmed)
        return entries

    def next_tuple(self) -> None:
        """Emit one entry; read or claim more when none is buffered. Never blocks."""
        if not self.ready:
            if time.monotonic() >= self.next_attempt:
                self._setup()
            return
        if self.completed:
            self._xack_completed()
        if self.reread:
            self.reread = False
            self._reread_history()
        try:
            if not self.buffer and self.history is not None:
                entries = self._read(self.history)
                self.history = entries[-1][0] if entries else None
            if not self.buffer and self.history is None and time.monotonic() >= self.next_claim:
                self._claim_abandoned()
            if not self.buffer and self.history is None:
                self._read(">")
        except redis.RedisError as exc:
            self.ready = False
            self._unreachable(exc)
            return
        if not self.buffer:
            return
        entry_id, fields = self.buffer.popleft()
        self.in_flight[entry_id] = fields
        try:
            data = self._decoded(fields)
        except UnicodeDecodeError as exc:
            text = f"entry is not {self.decode} text ({exc.reason} at byte {exc.start})"
            self.collector.report_error(
                ValueError(f"RedisStreamSpout: entry {entry_id!r} of {self.stream!r}: {text}")
            )
            self.fail(entry_id, FailReason("error", self.component, self.task, text))
            return
        shown = entry_id.decode() if self.decode else entry_id
        self.collector.emit([shown, data], msg_id=entry_id)

    def holding(self) -> str | None:
        """Entries read or failed and not emitted yet: the topology is not idle."""
        return f"{len(self.buffer)} entries to emit" if self.buffer else None

    def _decoded(self, fields: dict[bytes, bytes]) -> dict[Any, Any]:
        if not self.decode:
            return dict(fields)
        return {k.decode(self.decode): v.decode(self.decode) for k, v in fields.items()}

    def _claim_abandoned(self) -> None:
        """Take over entries another (gone) consumer left pending for too long."""
        self.next_claim = time.monotonic() + self.claim_idle_ms / 2000
        reply = self.client.xautoclaim(
            self.stream, self.group, self.consumer, self.claim_idle_ms, "0-0", count=READ_COUNT
        )
        claimed, deleted = reply[1], reply[2] if len(reply) > 2 else []
        self.buffer.extend((i, f) for i, f in claimed if f is not None and i not in self.in_flight)
        if deleted:  # trimmed from the stream while pending: nothing left to process
            self.client.xack(self.stream, self.group, *deleted)

    def message_key(self, msg_id: Any) -> str:
        """The entry id, which names the entry in any run."""
        return msg_id.decode() if isinstance(msg_id, bytes) else str(msg_id)

    def ack(self, msg_id: Any) -> None:
        """``XACK`` the entry: its tree completed."""
        if self.in_flight.pop(msg_id, None) is None:
            return
        self.completed.append(msg_id)
        self._xack_completed()

    def _xack_completed(self) -> None:
        """``XACK`` the completed entries; on a lost connection, again at the next call.

        An entry left unacked would stay pending for this consumer, which reads its own
        history only when it starts or reconnects, until claimed as abandoned.
        """
        try:
            self.client.xack(self.stream, self.group, *self.completed)
        except redis.RedisError as exc:
            if not self.xack_failing:  # one warning per outage
                log.warning("RedisStreamSpout: XACK failed (%s); retrying", exc)
            self.xack_failing = True
            return
        self.completed.clear()
        self.xack_failing = False

    def fail(self, msg_id: Any, reason: FailReason | None = None) -> None:
        """Deliver the entry again, or dead-letter it once delivered ``max_retries`` times."""
        fields = self.in_flight.pop(msg_id, None)
        if fields is None or (reason is not None and reason.kind == SHUTDOWN.kind):
            return  # a shutdown is not an attempt: it stays pending for this consumer
        if not counts_as_attempt(reason):  # a rollback: deliver it again, uncounted
            self.buffer.append((msg_id, fields))
            return
        try:
            pending = self.client.xpending_range(
                self.stream, self.group, msg_id, msg_id, 1, self.consumer
            )
            delivered = pending[0]["times_delivered"] if pending else 1
            if self.max_retries is not None and delivered >= self.max_retries:
                copy: dict[Any, Any] = {
                    **fields,
                    ATTEMPTS_FIELD: delivered,
                    REASON_FIELD: str(reason) if reason is not None else "unknown",
                    SOURCE_ID_FIELD: msg_id,
                }
                with self.client.pipeline(transaction=True) as tx:
                    tx.xadd(self.dead_letter_stream, copy)
                    tx.xack(self.stream, self.group, msg_id)
                    tx.execute()
                return
            claimed = self.client.xclaim(self.stream, self.group, self.consumer, 0, [msg_id])
            self.buffer.extend((i, f) for i, f in claimed if f is not None)
        except redis.RedisError as exc:  # it stays pending: claimed again later
            log.warning("RedisStreamSpout: retrying %r failed (%s)", msg_id, exc)

    def close(self) -> None:
        """Close the client; pending entries stay with this consumer for the next run."""
        if self.completed:
            self._xack_completed()
        self.client.close()


class RedisHashBolt(BatchingSink):
    """Writes each input as a Redis hash ``key_prefix + tup[key]``, acked after the write.

    Idempotent: a replayed tuple sets the same fields of the same hash again. Inputs are
    buffered and written in one ``MULTI``/``EXEC`` per ``batch_size`` tuples or tick (the
    bolt asks for a tick every ``flush_secs``); a failed write fails the whole batch.
    The client is shared by the tasks of a worker process.

    .. versionadded:: 0.1.0
    """

    transient: ClassVar[tuple[str, ...]] = ("client",)
    write_errors = (redis.RedisError,)

    def __init__(
        self,
        url: str,
        key: str,
        fields: list[str],
        *,
        key_prefix: str = "",
        batch_size: int = 500,
        flush_secs: float | None = 1.0,
    ) -> None:
        super().__init__(batch_size, flush_secs)
        url = checked_url("RedisHashBolt", url, REDIS_SCHEMES, "redis://127.0.0.1:6379/0")
        self.url, self.key, self.fields, self.key_prefix = url, key, fields, key_prefix

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Take the process's client for ``url``."""
        super().prepare(conf, context, collector)
        url = self.url
        self.client: Any = context.shared_resource(
            ("redis", url), lambda: redis.Redis.from_url(url)
        )

    def write(self, batch: list[Tuple]) -> None:
        """``HSET`` every tuple's hash in one ``MULTI``/``EXEC``."""
        with self.client.pipeline(transaction=True) as tx:
            for tup in batch:
                mapping = {f: tup[f] for f in self.fields}
                tx.hset(f"{self.key_prefix}{tup[self.key]}", mapping=mapping)
            tx.execute()
