"""``NatsJetStreamSpout``: at-least-once from a NATS JetStream durable pull consumer.

A message is acked when its tuple tree completes. A failed tree's message is nak-ed
with a delay, and JetStream delivers it again; once the server's delivery count
reaches ``max_retries`` it is published to ``dead_letter_subject`` (with the count and
the last failure reason in headers) and terminated. The consumer's ``ack_wait`` is
three message timeouts: a tree fails (and is nak-ed) within two, so the server never
redelivers a message that is still being processed. A spout that dies leaves its
messages unacked, and the server delivers them again after ``ack_wait``.

nats-py is asyncio: the client runs on an event loop in a thread of the spout's own,
which fetches ahead into a buffer; ``next_tuple`` only takes from that buffer, so it
never blocks, and acks travel back to the loop without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from concurrent.futures import Future
from typing import Any

from sparkstorm.connectors.extra import missing_extra

try:
    import nats
    import nats.errors
    from nats.js.api import AckPolicy, ConsumerConfig
    from nats.js.client import JetStreamContext
except ModuleNotFoundError as missing:  # the connectors extra is not installed
    raise missing_extra(missing, "NATS JetStream connector") from None

from sparkstorm._types import FailReason, counts_as_attempt
from sparkstorm.config import TOPOLOGY_MAX_SPOUT_PENDING, TOPOLOGY_MESSAGE_TIMEOUT_SECS
from sparkstorm.reliability.spout_collector import SpoutOutputCollector
from sparkstorm.topology.components import HoldsWork, Spout
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import OutputFieldsDeclarer
from sparkstorm.topology.fields import Fields
from sparkstorm.urls import checked_url, redacted

log = logging.getLogger(__name__)

ATTEMPTS_HEADER = "X-Sparkstorm-Attempts"
REASON_HEADER = "X-Sparkstorm-Last-Failure"
CONNECT_SECS = 5.0
RETRY_SECS = 5.0
RETRY_WAIT_SECS = 1.0
FETCH_SECS = 0.1
"""How long one fetch waits on the server. nats-py returns a fetch that got fewer than
its batch only at this deadline, so it bounds how long delivered messages sit unseen:
it must stay well under ``sparkstorm.idle.grace.secs`` (0.5 s), or an until-idle run
ends while the next messages are on their way (at 0.5 s it did, once in CI)."""
NATS_SCHEMES = ("nats", "tls", "ws", "wss")
LATE_SWEEPS = 30
"""At most this many sweeps (``FETCH_SECS`` and a round trip each) for what a pull request
delivered after ``close`` took the fetch's messages; two empty ones in a row end them."""


def _say_if_failed(done: Future[Any]) -> None:
    failed = None if done.cancelled() else done.exception()
    if failed is not None:
        log.warning("NatsJetStreamSpout: an ack, nak or dead letter failed (%s)", failed)


NAK_SLACK = 1.0
"""Seconds a nak-ed message may take past its delay to come back (the server, a fetch)."""


class NatsJetStreamSpout(Spout, HoldsWork):
    """Consumes ``subject`` of JetStream ``stream`` as durable consumer ``durable``.

    Emits ``(subject, data)``: the message's subject and its payload (text with
    ``decode``, bytes with ``decode=None``).

    Parameters
    ----------
    url
        The NATS server, e.g. ``nats://127.0.0.1:4222``.
    stream, subject, durable
        The JetStream stream, the subject filter, and the durable consumer's name (created
        if missing), shared by the spout's tasks.
    max_retries
        Deliveries (the server's count) after which a failing message is dead-lettered.
    dead_letter_subject
        Where it is published then; needed with ``max_retries``.
    nak_delay_secs
        How long JetStream waits before delivering a failed message again.

    .. versionadded:: 0.1.0
    """

    def __init__(
        self,
        url: str,
        stream: str,
        subject: str,
        durable: str,
        *,
        max_retries: int | None = None,
        dead_letter_subject: str | None = None,
        nak_delay_secs: float = 1.0,
        decode: str | None = "utf-8",
        fetch: int = 100,
    ) -> None:
        if max_retries is not None and not dead_letter_subject:
            msg = f"NatsJetStreamSpout({subject!r}): max_retries needs a dead_letter_subject"
            raise ValueError(msg)
        for server in url.split(","):
            checked_url(
                f"NatsJetStreamSpout({subject!r})",
                server.strip(),
                NATS_SCHEMES,
                "nats://127.0.0.1:4222",
            )
        self.url, self.stream, self.subject, self.durable = url, stream, subject, durable
        self.max_retries, self.dead_letter_subject = max_retries, dead_letter_subject
        self.nak_delay_secs, self.decode, self.fetch = nak_delay_secs, decode, fetch

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """``subject`` and ``data``."""
        declarer.declare(Fields("subject", "data"))

    def open(
        self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector
    ) -> None:
        """Start the client's event loop, connect and bind the durable pull consumer."""
        self.collector = collector
        self.component = context.get_this_component_id()
        self.task = context.get_this_task_id()
        self.ack_wait = 3.0 * conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS]
        self.max_ack_pending = conf.get(TOPOLOGY_MAX_SPOUT_PENDING) or 1000
        self.buffer: deque[Any] = deque()
        self.in_flight: dict[int, Any] = {}
        self.emitted: dict[int, int] = {}
        """Stream sequence -> the delivery (its count) last emitted, until acked or dead."""
        self._back_by = 0.0
        """When the last nak-ed message is back at the latest (monotonic)."""
        self.writing: list[Any] = []
        """The futures of the dead letters under way (see :meth:`holding`)."""
        self.sent: deque[Future[Any]] = deque()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.running = True
        self.connected = False
        self.next_attempt = 0.0
        self.attempt: Future[None] | None = None
        first = self._connect()
        with contextlib.suppress(Exception):  # the first attempt is reported at open
            first.result(3 * CONNECT_SECS)  # bounded by the attempt itself; a loaded host is slow
        self._connected()

    def _connect(self) -> Future[None]:
        """Start a connection attempt on the client's loop; ``_connected`` collects it."""
        self.last_error: BaseException | None = None
        self.attempt = asyncio.run_coroutine_threadsafe(
            asyncio.wait_for(self._start(), CONNECT_SECS), self.loop
        )
        return self.attempt

    def _connected(self) -> bool:
        """Whether the attempt under way succeeded; never waits.

        A failed attempt is reported, and the next one is due ``RETRY_SECS`` later.
        """
        attempt = self.attempt
        if attempt is None or not attempt.done():
            return False
        try:
            attempt.result()
        except Exception as exc:
            cause = self.last_error or exc
            self.collector.report_error(
                ConnectionError(
                    f"NatsJetStreamSpout cannot consume {self.stream}/{self.durable} at "
                    f"{redacted(self.url)}: {type(cause).__name__}: {cause or 'no answer'}; "
                    f"retrying in {RETRY_SECS:g} s"
                )
            )
            self.next_attempt = time.monotonic() + RETRY_SECS
            self.attempt = None
            return False
        self.connected = True
        return True

    async def _start(self) -> None:
        # nats-py retries inside connect() until max_reconnect_attempts is exceeded (0
        # means forever): allow one quick retry, so that a refused port or login is
        # reported at once, then let the connected client reconnect by itself, forever.
        self.client = await nats.connect(
            self.url,
            connect_timeout=2,
            max_reconnect_attempts=1,
            reconnect_time_wait=0.1,
            error_cb=self._on_error,
            disconnected_cb=self._on_disconnected,
            reconnected_cb=self._on_reconnected,
        )
        self.client.options.update(max_reconnect_attempts=-1, reconnect_time_wait=RETRY_WAIT_SECS)
        try:
            await self._bind()
        except BaseException:  # connected, but no consumer: do not leave the client open
            await self.client.close()
            raise

    async def _bind(self) -> None:
        self.js = self.client.jetstream()
        config = ConsumerConfig(
            durable_name=self.durable,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=self.ack_wait,
            max_ack_pending=self.max_ack_pending,
            filter_subject=self.subject,
        )
        self.sub = await self.js.pull_subscribe(
            self.subject, durable=self.durable, stream=self.stream, config=config
        )
        self.fetcher = asyncio.ensure_future(self._fetch_ahead())

    async def _on_error(self, error: BaseException) -> None:
        """Keep the telling cause (nats-py would print a traceback per failed attempt).

        What the server said (``'Authorization Violation'``) beats the socket reset that
        may follow it within the same attempt.
        """
        if not isinstance(self.last_error, nats.errors.Error):
            self.last_error = error

    async def _on_disconnected(self) -> None:
        if self.running:  # not the spout's own close
            log.warning("NatsJetStreamSpout lost %s; reconnecting", redacted(self.url))

    async def _on_reconnected(self) -> None:
        log.warning("NatsJetStreamSpout reconnected to %s", redacted(self.url))

    async def _fetch_ahead(self) -> None:
        """Keep the buffer filled; an empty fetch waits ``FETCH_SECS`` on the server."""
        while self.running:
            if len(self.buffer) >= self.fetch:
                await asyncio.sleep(0.01)
                continue
            try:
                self.buffer.extend(await self.sub.fetch(self.fetch, timeout=FETCH_SECS))
            except (TimeoutError, nats.errors.TimeoutError):
                continue  # nothing to deliver now
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.running:
                    log.warning("NatsJetStreamSpout: fetch failed (%s); retrying", exc)
                    await asyncio.sleep(1.0)

    def next_tuple(self) -> None:
        """Emit one fetched message. Never blocks."""
        if not self.connected:
            if self.attempt is None and time.monotonic() >= self.next_attempt:
                self._connect()
            if not self._connected():
                return
        if not self.buffer:
            return
        msg = self.buffer.popleft()
        key = msg.metadata.sequence.stream
        if self.emitted.get(key, 0) >= msg.metadata.num_delivered:
            return  # the same delivery twice (a fetch's and the sweep after it): emitted once,
        self.emitted[key] = msg.metadata.num_delivered  # even if its tree ended meanwhile
        self.in_flight[key] = msg
        try:
            data = msg.data.decode(self.decode) if self.decode else msg.data
        except UnicodeDecodeError as exc:
            text = f"payload is not {self.decode} text ({exc.reason} at byte {exc.start})"
            self.collector.report_error(
                ValueError(f"NatsJetStreamSpout: message {key} on {msg.subject!r}: {text}")
            )
            self.fail(key, FailReason("error", self.component, self.task, text))
            return
        self.collector.emit([msg.subject, data], msg_id=key)

    def _send(self, coroutine: Any) -> Future[Any]:
        """Run an ack, nak or publish on the client's loop without waiting for it.

        A failure is logged as soon as it happens (the server delivers a message whose
        ack, nak or term was lost again after ``ack_wait``).
        """
        while self.sent and self.sent[0].done():  # they finish about in order: O(1) a call
            self.sent.popleft()
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        future.add_done_callback(_say_if_failed)
        self.sent.append(future)
        return future

    def message_key(self, msg_id: Any) -> int:
        """The stream sequence, which names the message in any run."""
        return int(msg_id)

    def ack(self, msg_id: Any) -> None:
        """Ack the message: its tree completed."""
        msg = self.in_flight.pop(msg_id, None)
        if msg is not None:
            self.emitted.pop(msg_id, None)
            self._send(msg.ack())

    def fail(self, msg_id: Any, reason: FailReason | None = None) -> None:
        """Nak the message (delivered again after ``nak_delay_secs``) or dead-letter it."""
        msg = self.in_flight.pop(msg_id, None)
        if msg is None:
            return
        delivered = msg.metadata.num_delivered
        counted = counts_as_attempt(reason)
        if self.max_retries is not None and delivered >= self.max_retries and counted:
            self.emitted.pop(msg_id, None)  # a failed dead letter is delivered again: anew
            self.writing.append(self._send(self._dead_letter(msg, delivered, reason)))
        else:
            self._send(msg.nak(delay=self.nak_delay_secs))
            self._nak_sent()

    def _nak_sent(self) -> None:
        """A message was nak-ed: it is back within its delay (and some slack) at most."""
        self._back_by = max(self._back_by, time.monotonic() + self.nak_delay_secs + NAK_SLACK)

    def holding(self) -> str | None:
        """Messages nak-ed and not back yet, or dead letters still being written.

        A dead letter is stored, then its message terminated: until both are done, and
        until what was nak-ed is back, the topology is not idle.
        """
        self.writing = [future for future in self.writing if not future.done()]
        if self.writing:
            return f"{len(self.writing)} dead letter(s) being written"
        left = self._back_by - time.monotonic()
        return f"nak-ed messages come back within {left:.1f} s" if left > 0 else None

    async def _dead_letter(self, msg: Any, delivered: int, reason: FailReason | None) -> None:
        """Store a copy on the dead-letter subject, then terminate the message.

        A copy the server did not confirm (a loaded server, a lost connection) is said at
        once and the message is nak-ed, so it comes back after ``nak_delay_secs`` and is
        dead-lettered again, rather than after ``ack_wait`` while the rest waits.
        """
        headers = {
            **(msg.headers or {}),
            ATTEMPTS_HEADER: str(delivered),
            REASON_HEADER: str(reason) if reason is not None else "unknown",
        }
        assert self.dead_letter_subject is not None
        try:
            await self.js.publish(self.dead_letter_subject, msg.data, headers=headers)
        except Exception as exc:
            log.warning(
                "NatsJetStreamSpout: the dead letter of message %d failed (%s); it is "
                "delivered again",
                msg.metadata.sequence.stream,
                exc,
            )
            self._nak_sent()
            await msg.nak(delay=self.nak_delay_secs)
            return
        await msg.term()  # only once the copy is stored: a crash in between duplicates

    async def _finish_fetch(self) -> None:
        """Let the fetching end, and put in the buffer all that it brought.

        The fetch under way ends at its deadline (``FETCH_SECS``; allow ``CONNECT_SECS``
        for a loaded driver, whose event-loop thread may wait long for the GIL); a
        cancelled fetch would strand its messages on the server until their ack wait ran
        out. Its pull request lives on in the server until the same deadline and takes
        whatever becomes available meanwhile, the messages about to be nak-ed included;
        and a fetch that gave up part-way through a batch leaves the rest in the
        subscription's queue, where only the next fetch would have found it. So: wait
        for the request to expire, make a round trip so that all the server sent has
        arrived, and take the queue. What a request the server read late still delivers
        after that is :meth:`_return_late`'s.
        """
        try:
            await asyncio.wait_for(asyncio.shield(self.fetcher), CONNECT_SECS)
        except TimeoutError:
            self.fetcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.fetcher
        self.buffer.extend(await self._sweep())

    async def _sweep(self) -> list[Any]:
        """What arrived and no fetch took, after a fetch's deadline and a round trip."""
        await asyncio.sleep(FETCH_SECS)
        await self.client.flush(timeout=int(CONNECT_SECS))
        return self._undelivered()

    def _undelivered(self) -> list[Any]:
        """Empty the subscription's queue of what the server delivered and no fetch took.

        nats-py keeps it in a private queue: its ``fetch`` would take it too, but would
        then ask the server for more, which is what must stop here.
        """
        queue = self.sub._sub._pending_queue
        taken = []
        while not queue.empty():
            msg = queue.get_nowait()
            if not JetStreamContext.is_status_msg(msg):  # not "no messages", "timeout", ...
                taken.append(msg)
        return taken

    async def _return_late(self) -> int:
        """Nak what was delivered after the fetch's messages were taken; how many.

        A pull request lives on in the server until its own deadline, counted from when
        the server read it: on a loaded machine that is later than the client counts,
        and such a request takes messages from the stream, and the ones just nak-ed,
        after :meth:`_finish_fetch` took the queue. Closed with them unseen, they would
        wait out ``ack_wait`` (a graceful stop's next run, on the continuous mode beside
        a busy core, ended idle 24 messages short). So: sweep the queue until two sweeps
        in a row find nothing.
        """
        returned, empty = 0, 0
        for _ in range(LATE_SWEEPS):
            late = await self._sweep()
            empty = 0 if late else empty + 1
            if empty == 2:
                break
            for msg in late:
                await msg.nak()
            returned += len(late)
        return returned

    async def _flush_and_close(self) -> None:
        """Acks and naks are buffered writes: without the flush, close can drop them."""
        try:
            await self.client.flush(timeout=int(CONNECT_SECS))
        finally:
            await self.client.close()

    def close(self) -> None:
        """Stop fetching, return every message held without an outcome, close the client.

        That is what was fetched and not emitted, and what was emitted and neither acked
        nor failed (a run aborted, or a tree whose outcome never reached the spout): the
        server would hold those for ``ack_wait`` (three message timeouts) before another
        consumer could have them, where RabbitMQ requeues a closed channel's unacked
        messages at once. Acks and naks still on their way are finished first.
        """
        self.running = False
        if self.connected:
            asyncio.run_coroutine_threadsafe(self._finish_fetch(), self.loop).result(
                2 * CONNECT_SECS
            )
            held, self.in_flight = list(self.in_flight.values()), {}
            if held:
                log.warning(
                    "NatsJetStreamSpout: %d message(s) had no outcome at close; returned "
                    "to the stream for redelivery",
                    len(held),
                )
            for msg in [*self.buffer, *held]:
                self._send(msg.nak())
            for future in list(self.sent):
                try:
                    future.result(CONNECT_SECS)
                except Exception as exc:
                    log.warning("NatsJetStreamSpout: an ack or nak failed at close (%s)", exc)
            late = asyncio.run_coroutine_threadsafe(self._return_late(), self.loop)
            try:
                returned = late.result(LATE_SWEEPS * (FETCH_SECS + CONNECT_SECS))
            except Exception as exc:  # they come back after ack_wait: said, not raised
                log.warning("NatsJetStreamSpout: late deliveries not returned (%s)", exc)
            else:
                if returned:
                    log.info("NatsJetStreamSpout: %d late delivery(ies) returned", returned)
            asyncio.run_coroutine_threadsafe(self._flush_and_close(), self.loop).result(
                2 * CONNECT_SECS
            )
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(CONNECT_SECS)
