"""``RabbitMQSpout``: at-least-once from a RabbitMQ queue.

Delivery guarantee: **at-least-once**. A delivery is acked to RabbitMQ only when its tuple
tree completes (the spout's ``ack``). When the tree fails, the message goes back to the
queue; after ``max_retries`` failed attempts it goes to ``dead_letter_queue`` instead,
with the last failure reason and the attempt count in its headers. If the driver dies,
RabbitMQ hands every unacked delivery to the next consumer (Storm's "spout task dies").

Attempts are counted in a header on a republished copy (``x-sparkstorm-attempts``), so
the count survives the consumer's death and works on classic and quorum queues alike: on
a failure the spout publishes the message again (with publisher confirms) with the count
raised, then acks the original. A crash between the two leaves a duplicate, never a loss.
Without ``max_retries`` a failed delivery is simply rejected with requeue.

The message id of a tuple is (connection generation, delivery tag). A lost connection
is noticed once: its deliveries are forgotten (RabbitMQ requeues them), outcomes for
them are dropped without touching the dead channel (no double ack), and the spout
reconnects with a new generation, backing off from 1 s, doubling, to 30 s, one log line
per attempt. Every delivery that enters the spout ends acked, requeued or
dead-lettered: a body that cannot be decoded fails at once with reason ``error``
(an attempt like any other; without ``max_retries`` it goes to the dead-letter queue if
there is one, else it is rejected without requeue), and the error names its message id.

Publishers that set the ``message_id`` property give stateful topologies exactly-once
state even when the driver dies as a checkpoint commits (``message_key``).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

from sparkstorm.connectors.extra import missing_extra

try:
    import pika
    import pika.exceptions
except ModuleNotFoundError as missing:  # the connectors extra is not installed
    raise missing_extra(missing, "RabbitMQ connector") from None

from sparkstorm._types import FailReason, counts_as_attempt
from sparkstorm.reliability.spout_collector import SpoutOutputCollector
from sparkstorm.topology.components import HoldsWork, Spout
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import OutputFieldsDeclarer
from sparkstorm.topology.fields import Fields
from sparkstorm.urls import checked_url

log = logging.getLogger(__name__)

ATTEMPTS_HEADER = "x-sparkstorm-attempts"
REASON_HEADER = "x-sparkstorm-last-failure"
RECONNECT_SECS = 1.0
MAX_RECONNECT_SECS = 30.0
MAX_ATTEMPTS = 2**31 - 1
"""The largest count of attempts taken from a header (an AMQP long-int carries it)."""
REQUEUE, REJECT, COUNT, DEAD_LETTER = "requeue", "reject", "count", "dead-letter"
"""How a failed delivery ends (see ``RabbitMQSpout._settle``)."""
FIRST_FETCH_SECS = 0.3
RETURN_SECS = 1.0
"""How long a message handed back to its queue counts as held: until RabbitMQ delivers
it again, which is at once unless the queue is long (see :meth:`RabbitMQSpout.holding`)."""
_CONNECTION_ERRORS = (pika.exceptions.AMQPError, OSError)


class RabbitMQSpout(Spout, HoldsWork):
    """Consumes ``queue`` at ``url``; emits ``(body,)``; acks a delivery when its tree completes.

    Parameters
    ----------
    url
        An AMQP URL, e.g. ``amqp://guest:guest@127.0.0.1:5672/%2F``.
    queue
        The queue to consume (declared durable if it does not exist).
    max_retries
        Failed attempts after which a message is dead-lettered; None: retry forever.
    dead_letter_queue
        Where messages go after ``max_retries`` (declared durable); needed with
        ``max_retries``.
    prefetch
        RabbitMQ's prefetch count (unacked deliveries held by this consumer); default:
        ``topology.max.spout.pending``, else 1000.
    decode
        Text encoding of bodies; None emits bytes.

    .. versionadded:: 0.1.0
    """

    def __init__(
        self,
        url: str,
        queue: str,
        *,
        max_retries: int | None = None,
        dead_letter_queue: str | None = None,
        prefetch: int | None = None,
        decode: str | None = "utf-8",
    ) -> None:
        if max_retries is not None and not dead_letter_queue:
            msg = f"RabbitMQSpout({queue!r}): max_retries needs a dead_letter_queue to send to"
            raise ValueError(msg)
        self.url = checked_url(
            f"RabbitMQSpout({queue!r})",
            url,
            ("amqp", "amqps"),
            "amqp://guest:guest@127.0.0.1:5672/%2F",
        )
        self.queue = queue
        self.max_retries, self.dead_letter_queue = max_retries, dead_letter_queue
        self.prefetch, self.decode = prefetch, decode

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """One field, ``body``."""
        declarer.declare(Fields("body"))

    def open(
        self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector
    ) -> None:
        """Connect and start consuming; a broker that cannot be reached is retried."""
        self.collector = collector
        self.prefetch = self.prefetch or conf.get("topology.max.spout.pending") or 1000
        self.component = context.get_this_component_id()
        self.task = context.get_this_task_id()
        self.connection_name = f"sparkstorm:{self.component}:{self.queue}"
        self.generation = 0
        self.connection: Any = None
        self.channel: Any = None  # both set by _connect
        self.buffer: deque[tuple[Any, Any, bytes]] = deque()
        self.in_flight: dict[int, tuple[Any, bytes]] = {}
        self.next_attempt = 0.0
        self.backoff = RECONNECT_SECS
        self.returned_at = -RETURN_SECS
        self._reconnect()

    def _where(self) -> str:
        params = pika.URLParameters(self.url)
        return f"{params.host}:{params.port} (vhost {params.virtual_host!r})"

    def _connect(self) -> None:
        params = pika.URLParameters(self.url)
        params.client_properties = {"connection_name": self.connection_name}
        self.connection = pika.BlockingConnection(params)
        self.channel = self.connection.channel()
        self.channel.confirm_delivery()
        self.channel.queue_declare(self.queue, durable=True)
        if self.dead_letter_queue:
            self.channel.queue_declare(self.dead_letter_queue, durable=True)
        self.channel.basic_qos(prefetch_count=self.prefetch)
        self.channel.basic_consume(self.queue, self._on_message)
        self.generation += 1
        self.buffer.clear()
        self.in_flight.clear()
        # Let the broker push the first prefetch window, so that a run "until idle" on a
        # filled queue does not stop before the first delivery has arrived.
        self.connection.process_data_events(time_limit=FIRST_FETCH_SECS)

    def _on_message(self, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        self.buffer.append((method, properties, body))

    def next_tuple(self) -> None:
        """Emit one buffered delivery; pump the connection without waiting. Never blocks."""
        if self.connection is None:
            if time.monotonic() < self.next_attempt:
                return
            self._reconnect()
            if self.connection is None:
                return
        try:
            if not self.buffer:
                self.connection.process_data_events(time_limit=0)
            if self.buffer:
                method, properties, body = self.buffer.popleft()
                tag = method.delivery_tag
                self.in_flight[tag] = (properties, body)
                try:
                    value = body.decode(self.decode) if self.decode else body
                except UnicodeDecodeError as exc:
                    self._undecodable(tag, properties, exc)
                    return
                self.collector.emit([value], msg_id=(self.generation, tag))
        except _CONNECTION_ERRORS as exc:
            self._lost(exc)

    def _undecodable(self, tag: int, properties: Any, exc: UnicodeDecodeError) -> None:
        """Fail a delivery whose body is not ``decode`` text: it would fail on every try."""
        text = f"body is not {self.decode} text ({exc.reason} at byte {exc.start})"
        error = ValueError(
            f"RabbitMQSpout: message {properties.message_id or f'(delivery tag {tag})'} on "
            f"queue {self.queue!r}: {text}"
        )
        self.collector.report_error(error)
        reason = FailReason("error", self.component, self.task, text)
        if self.max_retries is not None:
            self._settle(tag, reason, COUNT)
        else:
            self._settle(tag, reason, DEAD_LETTER if self.dead_letter_queue else REJECT)

    def _reconnect(self) -> None:
        try:
            self._connect()
        except _CONNECTION_ERRORS as exc:
            self._close_quietly()
            self.connection = None
            # an error, not a warning: a run that never reached its broker did not succeed
            self.collector.report_error(
                ConnectionError(
                    f"RabbitMQSpout cannot connect to {self._where()} for queue "
                    f"{self.queue!r}: {_cause(exc)}; retrying in {self.backoff:g} s"
                )
            )
            self.next_attempt = time.monotonic() + self.backoff
            self.backoff = min(self.backoff * 2, MAX_RECONNECT_SECS)
            return
        if self.generation > 1:
            log.warning("RabbitMQSpout reconnected to %s, queue %r", self._where(), self.queue)
        self.backoff = RECONNECT_SECS

    def _lost(self, exc: BaseException) -> None:
        """The connection died: say so once, forget its deliveries, reconnect later."""
        if self.connection is None:
            return
        log.warning(
            "RabbitMQSpout lost its connection to %s (%s); its %d unacked deliveries "
            "return to queue %r and will be redelivered",
            self._where(),
            _cause(exc),
            len(self.in_flight),
            self.queue,
        )
        self._close_quietly()
        self.connection = None
        self.in_flight.clear()
        self.buffer.clear()
        self.next_attempt = time.monotonic() + self.backoff

    def ack(self, msg_id: Any) -> None:
        """Ack the delivery to RabbitMQ: its tree completed."""
        generation, tag = msg_id
        if generation != self.generation or self.in_flight.pop(tag, None) is None:
            return  # from a lost connection: RabbitMQ already requeued it
        try:
            self.channel.basic_ack(tag)
        except _CONNECTION_ERRORS as exc:
            self._lost(exc)

    def holding(self) -> str | None:
        """A failed message handed back to the queue in the last :data:`RETURN_SECS`.

        RabbitMQ delivers it again, to this task or another, a moment later; meanwhile
        the spout is not idle, and has not given up on it.
        """
        if time.monotonic() - self.returned_at < RETURN_SECS:
            return f"a failed message handed back to queue {self.queue!r}, to come again"
        return None

    def message_key(self, msg_id: Any) -> str | None:
        """The publisher's ``message_id`` property (None without one).

        With it, a stateful topology never counts a message twice, even when the driver
        dies as a checkpoint commits.
        """
        generation, tag = msg_id
        entry = self.in_flight.get(tag) if generation == self.generation else None
        return None if entry is None else entry[0].message_id

    def fail(self, msg_id: Any, reason: FailReason | None = None) -> None:
        """Return the message to the queue, or dead-letter it after ``max_retries``.

        A ``shutdown`` or ``rollback`` failure (the topology stopped, or a failure elsewhere
        rolled stateful bolts back) is not an attempt: the message goes back to the queue
        as it was, uncounted.
        """
        generation, tag = msg_id
        if generation != self.generation or tag not in self.in_flight:
            return  # from a lost connection: RabbitMQ already requeued it
        if self.max_retries is None or not counts_as_attempt(reason):
            self._settle(tag, reason, REQUEUE)
        else:
            self._settle(tag, reason, COUNT)

    def _settle(self, tag: int, reason: FailReason | None, how: str) -> None:
        """End a failed delivery as ``how`` says.

        ``REQUEUE`` and ``REJECT`` hand it back as it is; ``COUNT`` and ``DEAD_LETTER``
        republish it with its attempt counted (to the dead-letter queue at once, or once
        the attempts reach ``max_retries``), then ack the original.
        """
        properties, body = self.in_flight.pop(tag)
        try:
            if how in (REQUEUE, REJECT):
                self.channel.basic_nack(tag, requeue=how == REQUEUE)
                if how == REQUEUE:
                    self.returned_at = time.monotonic()
                return
            headers = dict(properties.headers or {})
            attempts = self._attempts_before(headers, properties.message_id) + 1
            if self.max_retries is not None:  # a count past the limit is the limit: exhausted
                attempts = min(attempts, self.max_retries)
            headers[ATTEMPTS_HEADER] = attempts
            headers[REASON_HEADER] = str(reason) if reason is not None else "unknown"
            exhausted = self.max_retries is not None and attempts >= self.max_retries
            target = self.dead_letter_queue if how == DEAD_LETTER or exhausted else self.queue
            if target == self.queue:
                self.returned_at = time.monotonic()
            try:
                self.channel.basic_publish("", target, body, _copy(properties, headers))
            except _CONNECTION_ERRORS:
                raise
            except Exception as exc:  # a header pika cannot encode (an int past 64 bits)
                self._unsendable(properties, body, headers, exc)
            self.channel.basic_ack(tag)  # confirmed: the copy is in its queue
        except _CONNECTION_ERRORS as exc:
            self._lost(exc)

    def _unsendable(
        self, properties: Any, body: bytes, headers: dict[str, Any], exc: Exception
    ) -> None:
        """Dead-letter a message whose own headers cannot be sent again, with ours only.

        Counted again it would fail the same way each time, holding its prefetch slot
        and coming back after every restart; so it goes where a poison message goes, said
        in one line that names it.
        """
        log.warning(
            "RabbitMQSpout: message %s on queue %r has headers that cannot be sent again "
            "(%s: %s): dead-lettered to %r with sparkstorm's headers only",
            properties.message_id or "(no message id)",
            self.queue,
            type(exc).__name__,
            exc,
            self.dead_letter_queue,
        )
        ours = {k: headers[k] for k in (ATTEMPTS_HEADER, REASON_HEADER)}
        ours[REASON_HEADER] += f"; its headers could not be sent again ({type(exc).__name__})"
        target = self.dead_letter_queue or self.queue
        self.channel.basic_publish("", target, body, _copy(properties, ours))

    def _attempts_before(self, headers: dict[str, Any], message_id: str | None) -> int:
        """The attempts the header counts; one that is no count is hostile input: 0."""
        raw = headers.get(ATTEMPTS_HEADER, 0)
        if isinstance(raw, bytes):
            raw = raw.decode(errors="replace")
        if isinstance(raw, str) and raw.strip().isdigit():
            raw = int(raw)
        if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
            return min(raw, MAX_ATTEMPTS)  # a count no header can carry is past every limit
        log.warning(
            "RabbitMQSpout: message %s on queue %r has %s=%.40r, not a count of attempts: "
            "counted as its first",
            message_id or "(no message id)",
            self.queue,
            ATTEMPTS_HEADER,
            raw,
        )
        return 0

    def close(self) -> None:
        """Close the connection; unacked deliveries return to the queue."""
        self._close_quietly()

    def _close_quietly(self) -> None:
        try:
            if self.connection is not None and self.connection.is_open:
                self.connection.close()
        except _CONNECTION_ERRORS:
            pass


def _copy(properties: Any, headers: dict[str, Any]) -> pika.BasicProperties:
    """The message's properties again, with ``headers``."""
    return pika.BasicProperties(
        headers=headers,
        delivery_mode=properties.delivery_mode,
        content_type=properties.content_type,
        message_id=properties.message_id,
    )


def _cause(exc: BaseException) -> str:
    """The innermost reason of a pika error (pika wraps "connection refused" twice)."""
    while True:
        inner = next((a for a in exc.args if isinstance(a, BaseException)), None)
        nested = getattr(exc, "exceptions", None) or getattr(exc, "exception", None)
        if inner is None and isinstance(nested, list | tuple) and nested:
            inner = nested[-1]
        elif inner is None and isinstance(nested, BaseException):
            inner = nested
        if inner is None:
            return str(exc) or type(exc).__name__
        exc = inner
