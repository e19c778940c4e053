"""Trident spouts over NATS JetStream: a batch is a range of stream sequence numbers.

``NatsJetStreamTridentSpout`` is transactional: each stream is a partition, a batch's
metadata is the sequence range it read there (``{"from": 41, "to": 90}``), kept in the
checkpoint store before the batch's tuples leave, and a replayed batch reads exactly that
range again, through an ephemeral consumer that starts at ``from``. Messages are never
acked or deleted by the spout: the stream is the log, its retention policy trims it,
and the committed ranges say how far the topology got.
``NatsJetStreamOpaqueTridentSpout`` is the same source as an opaque spout.

Tuples are ``[seq, subject, data]``: the stream sequence, the subject, and the payload
(``str`` decoded as ``decode``, or ``bytes`` with ``decode=None``).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from typing_extensions import override

from sparkstorm.connectors.extra import missing_extra

try:
    import nats
    from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
except ModuleNotFoundError as missing:  # the connectors extra is not installed
    raise missing_extra(missing, "NATS JetStream connector") from None

from sparkstorm.connectors.nats_jetstream import NATS_SCHEMES
from sparkstorm.topology.fields import Fields
from sparkstorm.trident.partitioned import (
    IPartitionedTridentSpout,
    Meta,
    NamedPartitions,
    OpaqueOf,
    PartitionedCoordinator,
    RangeEmitter,
    TransactionalEmitter,
)
from sparkstorm.trident.tuple import TridentCollector
from sparkstorm.urls import checked_url, redacted

CALL_SECS = 30.0
"""The longest one read of a batch may take before the batch is held back and retried."""
FETCH = 1000
"""Messages asked for in one fetch."""


class _Emitter(RangeEmitter):
    """Reads sequence ranges from the streams, on an event loop of its own."""

    def __init__(self, url: str, subject: str | None, max_batch_size: int, decode: str | None):
        self.url, self.subject = url, subject
        self.max_batch_size, self.decode = max_batch_size, decode
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True, name="nats-trident").start()
        self.client: Any = None

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(CALL_SECS)

    async def _js(self) -> Any:
        if self.client is None or self.client.is_closed:
            try:
                self.client = await nats.connect(
                    self.url, connect_timeout=2, max_reconnect_attempts=1
                )
            except Exception as exc:
                msg = f"NatsJetStreamTridentSpout cannot reach {redacted(self.url)}: {exc!r}"
                raise ConnectionError(msg) from None
        return self.client.jetstream()

    async def _read(self, stream: str, start: int, limit: int, last: int | None) -> list[Any]:
        """Up to ``limit`` messages from sequence ``start`` on (none past ``last``)."""
        js = await self._js()
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=start,
            ack_policy=AckPolicy.NONE,
            inactive_threshold=60.0,
            mem_storage=True,
        )
        subject = self.subject or ">"
        sub = await js.pull_subscribe(subject, durable=None, stream=stream, config=config)
        info = await sub.consumer_info()
        try:
            want = min(limit, info.num_pending)
            got: list[Any] = []
            while len(got) < want and not (got and last and _seq(got[-1]) >= last):
                got += await sub.fetch(min(want - len(got), FETCH), timeout=CALL_SECS / 2)
            return [m for m in got if last is None or _seq(m) <= last]
        finally:
            await sub.unsubscribe()
            await js.delete_consumer(stream, info.name)

    @override
    def read_after(self, partition: str, last: Meta | None) -> tuple[list[Any], Any, Any]:
        after = (last or {}).get("to") or 0
        messages = self._run(self._read(partition, after + 1, self.max_batch_size, None))
        if not messages:
            return [], None, after
        return messages, _seq(messages[0]), _seq(messages[-1])

    @override
    def read_range(self, partition: str, first: Any, last: Any) -> list[Any]:
        return self._run(self._read(partition, first, last - first + 1, last))  # type: ignore[no-any-return]

    @override
    def emit_records(self, collector: TridentCollector, records: list[Any]) -> None:
        decode = self.decode
        for m in records:
            collector.emit([_seq(m), m.subject, m.data.decode(decode) if decode else m.data])

    @override
    def close(self) -> None:
        if self.client is not None:
            self._run(self.client.close())
        self.loop.call_soon_threadsafe(self.loop.stop)


def _seq(message: Any) -> int:
    return int(message.metadata.sequence.stream)


class NatsJetStreamTridentSpout(IPartitionedTridentSpout):
    """A transactional Trident spout over JetStream streams, each stream a partition.

    Examples
    --------
    >>> spout = NatsJetStreamTridentSpout("nats://127.0.0.1:4222", "ORDERS")

    .. versionadded:: 0.3.0
    """

    def __init__(
        self,
        url: str,
        streams: str | list[str],
        *,
        subject: str | None = None,
        max_batch_size: int = 10_000,
        decode: str | None = "utf-8",
    ) -> None:
        for server in url.split(","):
            checked_url(
                "NatsJetStreamTridentSpout", server.strip(), NATS_SCHEMES, "nats://127.0.0.1:4222"
            )
        self.url, self.subject = url, subject
        self.streams = [streams] if isinstance(streams, str) else list(streams)
        self.max_batch_size, self.decode = max_batch_size, decode

    @override
    def get_coordinator(self, conf: dict[str, Any], context: Any) -> PartitionedCoordinator:
        return NamedPartitions(self.streams)

    @override
    def get_emitter(self, conf: dict[str, Any], context: Any) -> TransactionalEmitter:
        return _Emitter(self.url, self.subject, self.max_batch_size, self.decode)

    @override
    def get_output_fields(self) -> Fields:
        return Fields("seq", "subject", "data")


class NatsJetStreamOpaqueTridentSpout(OpaqueOf):
    """The same source as an opaque spout: a replay reads on from the batch before it.

    .. versionadded:: 0.3.0
    """

    def __init__(self, url: str, streams: str | list[str], **options: Any) -> None:
        super().__init__(NatsJetStreamTridentSpout(url, streams, **options))
