"""Kafka: ``KafkaSpout`` (storm-kafka-client's, in Python) and ``KafkaBolt``.

``KafkaSpout`` reads its share of the topics' partitions with confluent-kafka:
``assignment="manual"`` deals them by task index (storm-kafka-client's default), each
pinned for the run; ``"group"`` subscribes, and the consumer group deals them among
every consumer of ``group_id``, this topology's tasks and any other's: on a revoke the
spout commits what is done and drops the revoked partitions' records (their late acks
are ignored), on an assign it reads from the committed offset.
Under ``AT_LEAST_ONCE`` a record's offset is committed to Kafka under ``group_id`` only
once it and every offset before it in its partition are done (acked, dead-lettered, or
skipped), every ``offset_commit_period_ms`` and at close. Each period commits every
partition read, moved or not, as Kafka's own consumer commits its positions: a partition
idle past the broker's ``offsets.retention.minutes`` (7 days) keeps its commit, which
Kafka expires for a group of assigned consumers, and a commit a broker took and lost
(restarted before it kept it) is made again. A failed record is tried again
after :class:`KafkaSpoutRetryExponentialBackoff`'s delay, at most ``max_retries + 1``
times in all; then it goes to ``dead_letter_topic`` (key and value unchanged, headers
``sparkstorm.attempts`` and ``sparkstorm.reason``) and counts as done. A ``shutdown``
failure is not an attempt. A record that cannot be decoded goes there at once, with
reason ``undecodable``. A failed record waits in memory (storm-kafka-client seeks back
and polls it again: the same record, one fetch fewer); ``max_uncommitted_offsets``
bounds what a partition holds: past it, the partition is paused until commits catch up.

``KafkaBolt`` produces each input (Storm's ``FieldNameBasedTupleToKafkaMapper``: fields
``key`` and ``message``) with the idempotent producer, and acks an input only once the
broker confirmed its write; a delivery error fails it.
"""

from __future__ import annotations

import enum
import json
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sparkstorm.connectors.extra import missing_extra
from sparkstorm.connectors.kafka_client_log import with_client_log

try:
    from confluent_kafka import (
        OFFSET_BEGINNING,
        OFFSET_END,
        Consumer,
        KafkaError,
        KafkaException,
        Producer,
        TopicPartition,
    )
except ModuleNotFoundError as missing:  # the connectors extra is not installed
    raise missing_extra(missing, "Kafka connector") from None

from sparkstorm._types import FailReason, counts_as_attempt
from sparkstorm.config import TOPOLOGY_TICK_TUPLE_FREQ_SECS
from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.reliability.spout_collector import SpoutOutputCollector
from sparkstorm.topology.components import Bolt, HoldsWork, Spout
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import OutputFieldsDeclarer
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.tuple import Tuple
from sparkstorm.urls import checked_bootstrap_servers

log = logging.getLogger(__name__)

ATTEMPTS_HEADER = "sparkstorm.attempts"
REASON_HEADER = "sparkstorm.reason"
DEFAULT_FIELDS = ("topic", "partition", "offset", "key", "value")
POLL_RECORDS = 500
"""Records taken from the client in one call (without waiting)."""
CALL_SECS = 10.0
OPEN_SECS = 3.0
"""How long ``open`` waits for the broker's metadata before reporting it unreachable."""
RETRY_LOOKUP_SECS = 0.2
"""How long a later attempt may hold ``next_tuple`` (every ``RETRY_SECS``)."""
RETRY_SECS = 5.0
REPORTS_EVERY = 64
"""Produces between two services of ``KafkaBolt``'s delivery reports (ticks serve them too):
each service costs more than a produce, and a report waits at most one tick."""
QUEUE_FULL_SECS = 5.0
"""How long ``KafkaBolt`` waits for room in the producer's queue (serving delivery reports
meanwhile, as Kafka's Java producer blocks for ``max.block.ms``) before it fails the
tuple: a burst is slowed down, not failed."""


class FirstPollOffsetStrategy(enum.Enum):
    """Where a partition is first read (storm-kafka-client's ``FirstPollOffsetStrategy``).

    ``EARLIEST`` and ``LATEST`` ignore the group's commits whenever the spout opens;
    the ``UNCOMMITTED_`` ones start at the commit, and only without one at the start or
    the end.

    .. versionadded:: 0.3.0
    """

    EARLIEST = "earliest"
    LATEST = "latest"
    UNCOMMITTED_EARLIEST = "uncommitted_earliest"
    UNCOMMITTED_LATEST = "uncommitted_latest"


class ProcessingGuarantee(enum.Enum):
    """storm-kafka-client's ``ProcessingGuarantee``.

    ``AT_LEAST_ONCE``: tracked, committed once done. ``AT_MOST_ONCE``: committed as it
    is polled, before it is emitted, untracked. ``NO_GUARANTEE``: untracked, committed
    every ``offset_commit_period_ms`` whatever happened to it.

    .. versionadded:: 0.3.0
    """

    AT_LEAST_ONCE = "at_least_once"
    AT_MOST_ONCE = "at_most_once"
    NO_GUARANTEE = "no_guarantee"


UNCOMMITTED_EARLIEST = FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST
AT_LEAST_ONCE = ProcessingGuarantee.AT_LEAST_ONCE


@dataclass(frozen=True)
class KafkaSpoutRetryExponentialBackoff:
    """When a failed record is tried again (storm-kafka-client's, in seconds).

    The first retry after ``initial_delay_secs``, the n-th after ``delay_period_secs *
    2**(n-1)``, never more than ``max_delay_secs``; a record is tried at most
    ``max_retries + 1`` times (None: for ever).

    .. versionadded:: 0.3.0
    """

    initial_delay_secs: float = 0.0
    delay_period_secs: float = 0.002
    max_retries: int | None = None
    max_delay_secs: float = 10.0

    def delay(self, retry: int) -> float:
        """Seconds before retry number ``retry`` (1 for the first)."""
        if retry <= 1:
            return min(self.initial_delay_secs, self.max_delay_secs)
        return float(min(self.delay_period_secs * 2 ** (retry - 1), self.max_delay_secs))

    def retries_left(self, attempts: int) -> bool:
        """Whether a record tried ``attempts`` times may be tried again."""
        return self.max_retries is None or attempts <= self.max_retries


@dataclass
class KafkaSpoutConfig:
    """What a :class:`KafkaSpout` reads and how (storm-kafka-client's ``KafkaSpoutConfig``).

    ``extra`` holds librdkafka settings (``security.protocol``, ``fetch.max.bytes``...).
    ``record_translator(record) -> list | None`` replaces the default tuple
    (``topic, partition, offset, key, value``, key and value UTF-8 text); with it, give
    ``output_fields``. A translator that returns None skips the record (it is done).

    .. versionadded:: 0.3.0
    """

    bootstrap_servers: str
    topics: list[str] | str | None
    group_id: str
    topic_pattern: str | None = None
    assignment: str = "manual"
    first_poll_offset_strategy: FirstPollOffsetStrategy = UNCOMMITTED_EARLIEST
    processing_guarantee: ProcessingGuarantee = AT_LEAST_ONCE
    max_uncommitted_offsets: int = 10_000_000
    offset_commit_period_ms: int = 30_000
    retry: KafkaSpoutRetryExponentialBackoff = field(
        default_factory=KafkaSpoutRetryExponentialBackoff
    )
    dead_letter_topic: str | None = None
    record_translator: Callable[[Any], list[Any] | None] | None = None
    output_fields: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        checked_bootstrap_servers("KafkaSpoutConfig", self.bootstrap_servers)
        if isinstance(self.topics, str):
            self.topics = [self.topics]
        if not self.topics and not self.topic_pattern:
            msg = "KafkaSpoutConfig: give topics (a list of names) or topic_pattern (a regex)"
            raise ValueError(msg)
        if self.assignment not in ("manual", "group"):
            msg = (
                f"KafkaSpoutConfig: assignment={self.assignment!r}; use 'manual' (partitions "
                "dealt by task index) or 'group' (the consumer group deals them)"
            )
            raise ValueError(msg)
        if self.retry.max_retries is not None and not self.dead_letter_topic:
            msg = "KafkaSpoutConfig: retry.max_retries needs a dead_letter_topic"
            raise ValueError(msg)
        if self.record_translator is not None and not self.output_fields:
            msg = "KafkaSpoutConfig: a record_translator needs output_fields (its tuple's names)"
            raise ValueError(msg)

    def consumer_settings(self) -> dict[str, Any]:
        """The librdkafka settings of the spout's consumer."""
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest"
            if self.first_poll_offset_strategy.value.endswith("earliest")
            else "latest",
            **self.extra,
        }


@dataclass
class _Partition:
    """One partition's records between the committed offset and the last polled."""

    committed: int
    """The next offset to commit: every record before it is done."""
    polled_to: int
    """The offset after the last record polled."""
    pending: dict[int, Any] = field(default_factory=dict)
    """Offsets not done yet (emitted, or waiting for a retry) -> the record."""

    def commit_point(self) -> int:
        """Where the commit may go now: the first record not done, or past the last polled."""
        return min(self.pending) if self.pending else self.polled_to


class KafkaSpout(Spout, HoldsWork):
    """Reads Kafka as storm-kafka-client's ``KafkaSpout``; at-least-once by default.

    Examples
    --------
    >>> config = KafkaSpoutConfig("127.0.0.1:9092", ["sentences"], "word-count")
    >>> spout = KafkaSpout(config)

    .. versionadded:: 0.3.0
    """

    def __init__(self, config: KafkaSpoutConfig) -> None:
        self.config = config

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """``topic, partition, offset, key, value``, or the translator's fields."""
        declarer.declare(Fields(self.config.output_fields or list(DEFAULT_FIELDS)))

    def open(
        self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector
    ) -> None:
        """Connect, and assign this task its share of the partitions."""
        self.collector = collector
        self.component = context.get_this_component_id()
        self.task = context.get_this_task_id()
        tasks = context.get_component_tasks(self.component)
        self.index, self.num_tasks = tasks.index(self.task), len(tasks)
        self.consumer = Consumer(with_client_log(self.config.consumer_settings()))
        self.producer: Producer | None = None
        self.parts: dict[tuple[str, int], _Partition] = {}
        self.attempts: dict[tuple[str, int, int], int] = {}
        self.retry_due: dict[tuple[str, int, int], float] = {}
        self.paused: set[tuple[str, int]] = set()
        self.polled: deque[Any] = deque()
        """Records polled and not taken yet (one is emitted a call)."""
        self.next_commit = time.monotonic() + self.config.offset_commit_period_ms / 1000
        self.assigned = False
        self.next_attempt = 0.0
        self.started: set[tuple[str, int]] = set()
        """Partitions this task has read (the first poll's strategy applies once)."""
        self._join = self._subscribe if self.config.assignment == "group" else self._assign
        self._join(OPEN_SECS)

    def _where(self) -> str:
        return f"{self.config.bootstrap_servers} (group {self.config.group_id!r})"

    def _assign(self, timeout: float) -> None:
        """Assign the task its partitions (every partition of the topics, dealt by index).

        ``timeout`` bounds the wait for the broker's metadata: a few seconds at open, a
        moment when ``next_tuple`` tries again (it must not hold the task up).
        """
        try:
            metadata = self.consumer.list_topics(timeout=timeout)
        except KafkaException as exc:
            self._unreachable(exc)
            return
        wanted = self.config.topics or []
        pattern = re.compile(self.config.topic_pattern) if self.config.topic_pattern else None
        names = sorted(
            t for t in metadata.topics if t in wanted or (pattern and pattern.fullmatch(t))
        )
        missing = [t for t in wanted if t not in metadata.topics]
        if missing:
            self.collector.report_error(
                LookupError(f"KafkaSpout: no topic {missing} at {self._where()}; waiting for it")
            )
        every = [(t, p) for t in names for p in sorted(metadata.topics[t].partitions)]
        mine = [TopicPartition(t, p) for t, p in every[self.index :: self.num_tasks]]
        if not mine:
            self.next_attempt = time.monotonic() + RETRY_SECS
            return
        strategy = self.config.first_poll_offset_strategy
        committed = {}
        if strategy.value.startswith("uncommitted"):
            for tp in self.consumer.committed(mine, timeout=CALL_SECS):
                committed[(tp.topic, tp.partition)] = tp.offset
        start = OFFSET_BEGINNING if strategy.value.endswith("earliest") else OFFSET_END
        for tp in mine:
            kept = committed.get((tp.topic, tp.partition), -1)
            tp.offset = kept if kept >= 0 else start
        self.consumer.assign(mine)
        for tp in mine:
            self.parts[(tp.topic, tp.partition)] = _Partition(-1, -1)
        self.assigned = True

    def _subscribe(self, timeout: float) -> None:
        """Join the consumer group, which deals the partitions (``assignment="group"``).

        The broker is asked for its metadata first, so that an unreachable one is said
        at once, as with ``manual``.
        """
        try:
            self.consumer.list_topics(timeout=timeout)
        except KafkaException as exc:
            self._unreachable(exc)
            return
        topics = list(self.config.topics or []) or [f"^({self.config.topic_pattern})$"]
        self.consumer.subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke)
        self.assigned = True

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        """Partitions dealt to this task: each read from its committed offset.

        The first time, with ``EARLIEST`` or ``LATEST``, from where the strategy says.
        """
        strategy = self.config.first_poll_offset_strategy
        for tp in partitions:
            key = (tp.topic, tp.partition)
            self.parts[key] = _Partition(-1, -1)
            if key not in self.started and not strategy.value.startswith("uncommitted"):
                tp.offset = OFFSET_BEGINNING if strategy.value.endswith("earliest") else OFFSET_END
            self.started.add(key)
        consumer.assign(partitions)
        self._said("assigned", partitions)

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        """Partitions taken away: commit what is done, and drop their records.

        Their late acks and fails find nothing; the new owner reads them from the commit.
        """
        revoked = {(tp.topic, tp.partition) for tp in partitions}
        due = self._commits_due(revoked)
        for key in revoked:
            self.parts.pop(key, None)
        self.attempts = {k: n for k, n in self.attempts.items() if k[:2] not in revoked}
        self.retry_due = {k: t for k, t in self.retry_due.items() if k[:2] not in revoked}
        self.polled = deque(r for r in self.polled if (r.topic(), r.partition()) not in revoked)
        self.paused -= revoked
        if due:
            self._commit_now(due)
        self._said("revoked", partitions)

    def _said(self, what: str, partitions: list[Any]) -> None:
        """One line for an operator: a rebalance moved partitions (storm-kafka-client's)."""
        names = ", ".join(f"{tp.topic}/{tp.partition}" for tp in partitions) or "none"
        log.warning(
            "KafkaSpout %s:%s: %s %s by group %r",
            self.component,
            self.task,
            what,
            names,
            self.config.group_id,
        )

    def _unreachable(self, exc: Exception) -> None:
        self.collector.report_error(
            ConnectionError(
                f"KafkaSpout cannot reach {self._where()}: {exc}; retrying in {RETRY_SECS:g} s"
            )
        )
        self.next_attempt = time.monotonic() + RETRY_SECS

    # -- reading ---------------------------------------------------------------------
    def next_tuple(self) -> None:
        """Emit one record: one due for a retry, or the next polled. Never waits.

        One a call, as storm-kafka-client: ``topology.max.spout.pending`` is checked
        before each call, so a call that emitted a whole poll would overshoot it.
        """
        now = time.monotonic()
        if not self._ready(now):
            return
        due = next((key for key, at in self.retry_due.items() if at <= now), None)
        if due is not None:
            del self.retry_due[due]
            self._emit(due, self.parts[due[:2]].pending[due[2]])
            return
        self._poll(POLL_RECORDS)
        while self.polled:
            if self._take(self.polled.popleft()):
                return

    def _ready(self, now: float) -> bool:
        """Whether the spout may read: assigned (asked again when due, if not), commits made."""
        if not self.assigned:
            if now >= self.next_attempt:
                self._join(RETRY_LOOKUP_SECS)
            return False
        if now >= self.next_commit:
            self._commit()
        return True

    def _poll(self, records: int) -> None:
        """Poll up to ``records`` more, once every record of the last poll was taken."""
        if not self.polled:
            self._pause_full()  # taking records moved the partitions' uncommitted counts
            self.polled.extend(self.consumer.consume(records, timeout=0))

    def _take(self, record: Any) -> bool:
        """Emit ``record``, or settle it if it cannot be; whether a tuple was emitted."""
        part = self._admitted(record)
        if part is None:
            return False
        try:
            values = self._translate(record)
        except UnicodeDecodeError as exc:
            self._undecodable(record, exc)
            return False
        if values is None:
            return False  # the translator skipped it: done
        key = (record.topic(), record.partition(), record.offset())
        if self.config.processing_guarantee is ProcessingGuarantee.AT_LEAST_ONCE:
            part.pending[key[2]] = (record, values)
            self._emit(key, part.pending[key[2]])
        else:
            self.collector.emit(values)
        return True

    def _admitted(self, record: Any) -> _Partition | None:
        """``record``'s partition, its offsets noted, if it is to be emitted, else None.

        Not an error, one of this spout's partitions, not pending nor committed yet. At
        most once, its offset is committed here, before it is emitted.
        """
        error = record.error()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                self.collector.report_error(
                    ConnectionError(f"{type(self).__name__} at {self._where()}: {error.str()}")
                )
            return None
        topic, partition, offset = record.topic(), record.partition(), record.offset()
        part = self.parts.get((topic, partition))
        if part is None or offset in part.pending or offset < part.committed:
            return None  # not ours, or already here
        if part.committed < 0:
            part.committed = offset
        part.polled_to = max(part.polled_to, offset + 1)
        if self.config.processing_guarantee is ProcessingGuarantee.AT_MOST_ONCE:
            part.committed = part.polled_to
            self._commit_now([TopicPartition(topic, partition, part.polled_to)])
        return part

    def _undecodable(self, record: Any, exc: UnicodeDecodeError) -> None:
        """Say that ``record``'s key or value is not UTF-8 text, and dead-letter it."""
        where = self.config.dead_letter_topic or "nowhere"
        self.collector.report_error(
            ValueError(
                f"{type(self).__name__}: record {record.topic()}/{record.partition()}/"
                f"{record.offset()}: its key or value is not utf-8 text ({exc.reason} at byte "
                f"{exc.start}); dead-lettered to {where}"
            )
        )
        self._dead_letter(record, 0, f"undecodable: {exc.reason} at byte {exc.start}")

    def _translate(self, record: Any) -> list[Any] | None:
        translator = self.config.record_translator
        if translator is not None:
            return translator(record)
        raw_key, raw_value = record.key(), record.value()
        return [
            record.topic(),
            record.partition(),
            record.offset(),
            None if raw_key is None else raw_key.decode("utf-8"),
            None if raw_value is None else raw_value.decode("utf-8"),
        ]

    def _emit(self, key: tuple[str, int, int], held: tuple[Any, list[Any]]) -> None:
        self.attempts[key] = self.attempts.get(key, 0) + 1
        self.collector.emit(held[1], msg_id=key)

    def _pause_full(self) -> None:
        """Pause a partition holding ``max_uncommitted_offsets`` records; resume it after."""
        limit = self.config.max_uncommitted_offsets
        for tp_key, part in self.parts.items():
            full = part.committed >= 0 and part.polled_to - part.committed >= limit
            if full and tp_key not in self.paused:
                self.consumer.pause([TopicPartition(*tp_key)])
                self.paused.add(tp_key)
            elif not full and tp_key in self.paused:
                self.consumer.resume([TopicPartition(*tp_key)])
                self.paused.discard(tp_key)

    # -- outcomes --------------------------------------------------------------------
    def message_key(self, msg_id: Any) -> str:
        """``topic/partition/offset``, which names the record in any run."""
        topic, partition, offset = msg_id
        return f"{topic}/{partition}/{offset}"

    def ack(self, msg_id: Any) -> None:
        """The record's tree completed: it is done."""
        self._done(msg_id)

    def holding(self) -> str | None:
        """Records failed and due for a retry: until then the topology is not idle."""
        if not self.retry_due:
            return None
        soonest = max(0.0, min(self.retry_due.values()) - time.monotonic())
        return f"{len(self.retry_due)} record(s) due for a retry, the first in {soonest:.1f} s"

    def fail(self, msg_id: Any, reason: FailReason | None = None) -> None:
        """Try the record again after the backoff; past ``max_retries``, dead-letter it."""
        part = self.parts.get(msg_id[:2])
        if part is None or msg_id[2] not in part.pending:
            return
        if not counts_as_attempt(reason):  # a shutdown: not an attempt
            self.attempts[msg_id] = self.attempts.get(msg_id, 1) - 1
            self.retry_due[msg_id] = time.monotonic()
            return
        attempts = self.attempts.get(msg_id, 1)
        if self.config.retry.retries_left(attempts):
            self.retry_due[msg_id] = time.monotonic() + self.config.retry.delay(attempts)
            return
        record = part.pending[msg_id[2]][0]
        self._dead_letter(record, attempts, str(reason) if reason is not None else "unknown")
        self._done(msg_id)

    def _done(self, msg_id: Any) -> None:
        part = self.parts.get(msg_id[:2])
        if part is not None:
            part.pending.pop(msg_id[2], None)
        self.attempts.pop(msg_id, None)
        self.retry_due.pop(msg_id, None)

    def _dead_letter(self, record: Any, attempts: int, reason: str) -> None:
        """Write ``record`` to the dead-letter topic, and wait for the broker's word."""
        topic = self.config.dead_letter_topic
        if topic is None:
            self.collector.report_error(
                ValueError(
                    f"KafkaSpout: record {record.topic()}/{record.partition()}/"
                    f"{record.offset()} dropped ({reason}); set dead_letter_topic to keep it"
                )
            )
            return
        if self.producer is None:
            self.producer = Producer(
                with_client_log(
                    {
                        "bootstrap.servers": self.config.bootstrap_servers,
                        "enable.idempotence": True,
                        **self.config.extra,
                    }
                )
            )
        headers: dict[str, str | bytes | None] = {
            ATTEMPTS_HEADER: str(attempts),
            REASON_HEADER: reason,
        }
        self.producer.produce(topic, record.value(), record.key(), headers=headers)
        if self.producer.flush(CALL_SECS) > 0:
            msg = f"KafkaSpout: the dead-letter topic {topic!r} did not confirm a write"
            raise ConnectionError(msg)

    # -- commits ---------------------------------------------------------------------
    def _commit(self) -> None:
        """Commit each partition read up to its first record not done, moved or not."""
        self.next_commit = time.monotonic() + self.config.offset_commit_period_ms / 1000
        if self.config.processing_guarantee is ProcessingGuarantee.AT_MOST_ONCE:
            return
        due = self._commits_due(self.parts)
        # a partition's commit point moves only once the broker took the commit: one
        # that failed (a broker restarting) is tried again at the next period
        for tp in self._commit_now(due) if due else []:
            kept = self.parts.get((tp.topic, tp.partition))
            if kept is not None:
                kept.committed = max(kept.committed, tp.offset)
        self._pause_full()

    def _commits_due(self, keys: Iterable[tuple[str, int]]) -> list[TopicPartition]:
        """The commits of those of ``keys``' partitions read from: each at its commit point."""
        due = []
        for key in keys:
            part = self.parts.get(key)
            point = part.commit_point() if part is not None else -1
            if point >= 0:
                due.append(TopicPartition(*key, point))
        return due

    def _commit_now(self, offsets: list[TopicPartition]) -> list[TopicPartition]:
        """Commit ``offsets``; those the broker took (a failure is reported, not raised)."""
        try:
            done = self.consumer.commit(offsets=offsets, asynchronous=False) or []
        except KafkaException as exc:
            self.collector.report_error(
                ConnectionError(f"KafkaSpout could not commit at {self._where()}: {exc}")
            )
            return []
        failed = [tp for tp in done if tp.error is not None]
        if failed:
            self.collector.report_error(
                ConnectionError(
                    f"KafkaSpout could not commit {len(failed)} partition(s) at "
                    f"{self._where()}: {failed[0].error}; trying again"
                )
            )
        return [tp for tp in done if tp.error is None]

    def deactivate(self) -> None:
        """Commit what is done (a graceful stop deactivates first)."""
        if self.assigned:
            self._commit()

    def close(self) -> None:
        """Commit what is done, and leave."""
        if self.assigned:
            self._commit()
        self.consumer.close()
        if self.producer is not None:
            self.producer.flush(CALL_SECS)


def idempotent_producer(bootstrap_servers: str, extra: dict[str, Any]) -> Any:
    """The bolts' producer: idempotent, 5 ms of linger, ``extra`` over those; logs ours."""
    settings = {"bootstrap.servers": bootstrap_servers, "enable.idempotence": True}
    return Producer(with_client_log({**settings, "linger.ms": 5, **extra}))


class KafkaBolt(Bolt):
    """Produces each input to Kafka; acks it once the broker confirmed the write.

    Storm's ``KafkaBolt`` with a ``DefaultTopicSelector(topic)`` (or ``topic_selector(tuple)
    -> str``) and a ``FieldNameBasedTupleToKafkaMapper(key_field, message_field)``: str
    values are written as UTF-8, bytes as they are, anything else as JSON.

    .. versionadded:: 0.3.0
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str | None = None,
        *,
        topic_selector: Callable[[Tuple], str] | None = None,
        key_field: str = "key",
        message_field: str = "message",
        flush_secs: float = 0.1,
        extra: dict[str, Any] | None = None,
    ) -> None:
        checked_bootstrap_servers("KafkaBolt", bootstrap_servers)
        if (topic is None) == (topic_selector is None):
            msg = "KafkaBolt: give a topic, or a topic_selector(tuple) -> topic, not both"
            raise ValueError(msg)
        self.bootstrap_servers, self.topic, self.topic_selector = (
            bootstrap_servers,
            topic,
            topic_selector,
        )
        self.key_field, self.message_field = key_field, message_field
        self.flush_secs, self.extra = flush_secs, extra or {}

    def get_component_configuration(self) -> dict[str, Any]:
        """A tick every ``flush_secs``: delivery reports are served at least that often."""
        return {TOPOLOGY_TICK_TUPLE_FREQ_SECS: self.flush_secs}

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Make the idempotent producer."""
        self.collector, self.unserved = collector, 0
        self.producer = idempotent_producer(self.bootstrap_servers, self.extra)

    def execute(self, tup: Tuple) -> None:
        """Produce the tuple; serve the delivery reports every ``REPORTS_EVERY`` tuples."""
        if tup.is_tick():
            self.collector.ack(tup)
            self.unserved = 0
            self.producer.poll(0)
            return
        topic = self.topic or self.topic_selector(tup)  # type: ignore[misc]
        key = tup.get(self.key_field) if self.key_field in tup.fields else None
        value = tup.get(self.message_field)
        if value.__class__ not in WRITTEN_AS_IS:
            value = as_json_bytes(value)
        if key.__class__ not in WRITTEN_AS_IS:
            key = as_json_bytes(key)
        try:
            self._produce(topic, value, key, self._reported(tup))
        except (BufferError, KafkaException) as exc:
            self.collector.report_error(exc)
            self.collector.fail(tup)
        self.unserved += 1
        if self.unserved >= REPORTS_EVERY:
            self.unserved = 0
            self.producer.poll(0)

    def _produce(self, topic: str, value: Any, key: Any, report: Callable[..., None]) -> None:
        """Produce, waiting for room in a full queue up to ``QUEUE_FULL_SECS``."""
        deadline = 0.0
        while True:
            try:
                self.producer.produce(topic, value, key, on_delivery=report)
                return
            except BufferError:
                now = time.monotonic()
                deadline = deadline or now + QUEUE_FULL_SECS
                if now >= deadline:
                    raise
                self.producer.poll(0.01)

    def _reported(self, tup: Tuple) -> Callable[[Any, Any], None]:
        def report(error: Any, message: Any) -> None:
            if error is None:
                self.collector.ack(tup)
                return
            self.collector.report_error(ConnectionError(f"KafkaBolt: {error.str()}"))
            self.collector.fail(tup)

        return report

    def cleanup(self) -> None:
        """Wait for the writes under way (their inputs are acked or failed)."""
        self.producer.flush(CALL_SECS)


WRITTEN_AS_IS = frozenset({str, bytes, type(None)})
"""What the producer writes as it is (str as UTF-8): a value of another type is JSON."""


def as_json_bytes(value: Any) -> bytes:
    """``value`` as JSON, UTF-8 encoded: what a Kafka writer sends of a value not str or bytes."""
    return json.dumps(value).encode("utf-8")
