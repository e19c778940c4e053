"""A spout task on the driver: its pending map, timeouts and outcomes (Storm's ``SpoutExecutor``).

``pending`` is a 2-bucket RotatingMap of root id -> (msg id, emit time, stream), rotated
once per message timeout by the spout's tick: a tree not complete within (T, 2T] of its
emit (or last reset) is failed to the spout with reason ``timeout``. Outcomes from the
acker remove the root first, so each msg id gets exactly one ``ack`` or ``fail``; a late
outcome finds nothing pending and is ignored. An Arrow spout's map also holds a record
batch's tracked rows as one entry (their roots are consecutive: ``PendingBatches``), and
takes a batch of acks at once.

What the spout emits, from ``next_tuple`` or from inside ``ack``/``fail`` (a replay),
collects in the task's outbox; the runtime drains it into each superstep.
"""

from __future__ import annotations

import inspect
import itertools
import math
import time
from collections import Counter
from collections.abc import Callable, Collection
from operator import itemgetter
from typing import Any

import numpy as np

from sparkstorm._types import TIMEOUT, FailReason, MsgId
from sparkstorm.config import TOPOLOGY_DEBUG, TOPOLOGY_MAX_SPOUT_PENDING
from sparkstorm.errors import SparkStormError
from sparkstorm.reliability.batch_collectors import BatchSpoutOutputCollector
from sparkstorm.reliability.debug import note_spout_calls
from sparkstorm.reliability.ids import id_source
from sparkstorm.reliability.pending_batches import PendingBatches
from sparkstorm.reliability.rotating_map import RotatingMap
from sparkstorm.reliability.spout_collector import SpoutOutputCollector
from sparkstorm.tasks.committed_sources import CommittedSources, message_key_of
from sparkstorm.tasks.hooks import Hooks, add_auto_hooks, hook_emits
from sparkstorm.tasks.metrics import TaskStats
from sparkstorm.tasks.registered_metrics import RegisteredMetrics
from sparkstorm.tasks.task_runner import copy_component
from sparkstorm.topology.columnar import ArrowSpout
from sparkstorm.topology.components import CompletableSpout, HoldsWork, Spout
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.hooks import SpoutAckInfo, SpoutFailInfo
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.streams import (
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_RESET_TIMEOUT_STREAM_ID,
)
from sparkstorm.topology.tuple import Row, Tuple

PENDING_BUCKETS = 2
FOLD_AT = 65536
FAILED_KEYS_CARRIED = 10_000
"""At most this many failed message keys travel in a task's reports (see
:meth:`SpoutTask.note_failed_keys`): beyond, a failure stays counted across a restart."""
_CARRIED_TYPES = (str, int, bytes)
Failures = dict[int, tuple[dict[str, int], dict[Any, str]]]
"""Per spout task, what an earlier start left failed for good: counts by kind, and the
keys they count (see :meth:`SpoutTask.carry_failures`)."""
"""Complete latencies a spout task keeps as floats before it buckets them."""


def _takes_reason(spout: Spout) -> bool:
    try:
        params = inspect.signature(spout.fail).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


class SpoutTask:
    """One spout task: the user's spout copy, its collector and its pending map."""

    def __init__(self, plan: Plan, task_id: int, seed: int, *, take: bool = False) -> None:
        """A task of ``plan``'s spout ``task_id``.

        ``take``: use the plan's own spout object rather than a copy, where the plan is
        the process's own copy and no other task copies from it later.
        """
        component_id = plan.task_component[task_id]
        self.task_id, self.seed, self.component_id = task_id, seed, component_id
        self.conf = plan.component_conf(component_id)
        spout: Any = plan.components[component_id].obj
        self.spout: Spout = spout if take else copy_component(spout, component_id)
        columnar = isinstance(self.spout, ArrowSpout)
        self.collector = (BatchSpoutOutputCollector if columnar else SpoutOutputCollector)(
            plan, task_id, self
        )
        if self.conf[TOPOLOGY_DEBUG]:
            note_spout_calls(self.collector)
        self.context = TopologyContext(plan, task_id, self.conf)
        self.pending: RotatingMap[int, tuple[MsgId, float, str]] = (
            PendingBatches if columnar else RotatingMap
        )(PENDING_BUCKETS, self._expired)
        self.max_pending: int | None = self.conf[TOPOLOGY_MAX_SPOUT_PENDING]
        self.stats = TaskStats(component_id, task_id)
        self.columnar = columnar
        """An Arrow spout: its acks come a batch at once (``ack_batch``)."""
        self._fail_takes_reason = _takes_reason(self.spout)
        self.now = 0.0
        self.outbox: list[Row] = []
        self.saturated = False
        """Whether the last ``next_batch`` used every call it was given, emitting on each."""
        self.calling: str | None = None
        """The spout method running now, for the watchdog (None between calls)."""
        self._skipped = False  # the last next_tuple acked a committed message
        self.hooks: Hooks | None = None
        """The task's hooks, once ``open`` found some (see ``tasks/hooks``)."""
        self.registered: RegisteredMetrics | None = None
        """The metrics ``open`` registered (see ``tasks/registered_metrics``)."""
        self.sealed: set[int] = set()
        """Roots of the trees a prepared checkpoint holds (see :meth:`seal`)."""
        self.replays: CommittedSources | None = None
        """Set on a restart with keys the last run committed (see ``committed_sources``)."""
        self._failed_last: dict[Any, str] = {}
        """Message ids whose last outcome is a failure, with its kind (see :meth:`_settled`)."""
        self._replay_pending: set[Any] = set()
        """Those of ``_failed_last`` the spout may still replay: it has not run dry since."""
        self._dry: tuple[float, int] | None = None
        """When ``next_tuple`` began to emit nothing (monotonic), and the emits then."""
        self._asked_since_outcome = False
        """Whether it ran dry on a call made after its last ack or fail."""
        self._completable = isinstance(self.spout, CompletableSpout)
        """Whether to ask the spout if it is exhausted (not after ``is_exhausted`` raised)."""
        self.begin(-1, 0.0)  # ids for emits made before the first superstep (in open)

    # -- called by the collector -------------------------------------------------------
    def track(self, root: int, msg_id: MsgId, stream: str) -> None:
        """Record a tracked emit as pending."""
        self.pending.put(root, (msg_id, self.now, stream))

    def track_batch(self, base: int, msg_ids: list[MsgId], stream: str) -> None:
        """Record a batch's tracked rows, roots ``base`` onwards, as one pending entry."""
        assert isinstance(self.pending, PendingBatches), "batches come from Arrow spouts"
        self.pending.put_batch(base, msg_ids, self.now, stream)

    def ack_untracked(self, msg_id: MsgId) -> None:
        """Ackers = 0: ack inside emit, as Storm does."""
        self._call_ack(msg_id)

    def committed_already(self, msg_id: MsgId) -> bool:
        """After a restart: whether ``msg_id``'s message is in committed state (then ack it)."""
        replays = self.replays
        if replays is None or not replays.skip.get(self.component_id):
            return False
        if not replays.skips(self.component_id, self.message_key(msg_id)):
            return False
        self.stats.skipped_committed += 1
        self._skipped = True
        self._call_ack(msg_id)
        return True

    def message_key(self, msg_id: MsgId) -> str | int | None:
        """The spout's key for ``msg_id``; an exception or a bad key is reported, gives None."""
        try:
            return message_key_of(self.spout, msg_id)
        except Exception as exc:
            self.collector.report_error(exc)
            return None

    # -- called by the runtime ---------------------------------------------------------
    def open(self) -> None:
        """Call the spout's ``open`` (with its task hooks added first, as Storm's)."""
        self.context.hooks.clear()
        self.context.metrics.clear()
        try:
            add_auto_hooks(self.context)
        except Exception as exc:
            self.collector.report_error(exc)
        self.guarded(self.spout.open, self.conf, self.context, self.collector)
        if self.context.metrics:
            self.registered = RegisteredMetrics(self.context.metrics)
        if self.context.hooks and self.hooks is None:
            self.hooks = Hooks(self.context.hooks, self.collector.report_error)
            hook_emits(self.collector, self.hooks, self.task_id)

    def close(self) -> None:
        """Call the spout's ``close``, then its hooks' ``cleanup``."""
        self.guarded(self.spout.close)
        if self.hooks is not None:
            self.hooks.cleanup()
        if self.registered is not None:  # the bucket under way is sent too
            self.registered.collect(self.now, self.stats, self.collector.report_error, last=True)

    def begin(self, superstep: int, now: float, ids: Callable[[], int] | None = None) -> None:
        """Start a superstep (or a worker's turn): its ids and clock, until the next one.

        ``ids`` is an id source kept for the run (a continuous worker's); without it the
        superstep's own is drawn.
        """
        self.now = now
        if self.registered is not None:
            self.registered.collect(now, self.stats, self.collector.report_error)
        if ids is None:
            ids = id_source(self.seed, superstep, self.task_id)
        self.collector.begin(self.outbox, ids, now, superstep)
        if self.replays is not None:
            self.collector.skip_committed(bool(self.replays.skip.get(self.component_id)))

    def skip_committed(self, sources: CommittedSources) -> None:
        """Ack, without emitting, messages that ``sources`` says are committed already."""
        self.replays = sources
        self.collector.skip_committed(bool(sources.skip.get(self.component_id)))

    def holding(self) -> str | None:
        """What the spout holds back though it emits nothing (a :class:`HoldsWork`)."""
        return self.spout.holding() if isinstance(self.spout, HoldsWork) else None

    def drain(self) -> list[Row]:
        """What the spout emitted since the last drain, with its acker inits."""
        self.collector.flush_inits()
        self.stats.emitted = self.collector.emitted  # also after an interrupted next_batch
        self.stats.transferred = self.collector.transferred
        self.stats.streams = self.collector.stream_counts()
        rows, self.outbox = self.outbox, []
        self.collector.send_to(self.outbox)
        return rows

    def next_batch(self, max_calls: int, max_emits: int | None = None) -> int:
        """Call ``next_tuple`` up to ``max_calls`` times; stop early when it emits nothing.

        Respects ``topology.max.spout.pending``, and stops once ``max_emits`` tuples (or
        rows: an Arrow spout's batch counts its rows) are out. Returns how many messages
        the spout took (emits, and after a restart, messages acked as committed already);
        ``saturated`` tells whether it would have taken more calls.
        """
        collector = self.collector
        start, skipped = collector.emitted, self.stats.skipped_committed
        pending, limit = self.pending, self.max_pending
        next_tuple = self.spout.next_tuple
        self.saturated = False
        self.calling = "next_tuple"
        most = start + max_emits if max_emits is not None else None
        for _ in range(max_calls):
            if limit is not None and len(pending) >= limit:
                break
            before = collector.emitted
            if most is not None and before >= most:
                break
            try:
                next_tuple()
            except Exception as exc:
                collector.report_error(exc)
                break
            if collector.emitted == before:
                if not self._skipped:
                    self._ran_dry()
                    break
                self._skipped = False  # it acked a committed message: go on
        else:
            self.saturated = max_calls > 0
        self.calling = None
        self.stats.emitted, self.stats.transferred = collector.emitted, collector.transferred
        self.stats.batches_out = collector.batches
        return collector.emitted - start + self.stats.skipped_committed - skipped

    def _ran_dry(self) -> None:
        """``next_tuple`` emitted nothing: the spout is dry, unless it holds work back."""
        if self.holding() is not None:
            self._dry = None
            return
        if self._replay_pending:
            self._gave_up()
        emitted = self.collector.emitted
        if self._dry is None or self._dry[1] != emitted:
            self._dry = (time.monotonic(), emitted)
        self._asked_since_outcome = True

    def dry_since(self) -> float | None:
        """Since when (monotonic) the spout has been dry, or None if it is not now.

        Dry: ``next_tuple`` has emitted nothing since then (nor ``ack``/``fail``), the
        spout holds nothing back, and it was asked again after its last outcome. The last
        part matters for a spout that waits for its own messages' outcomes before
        emitting more (Trident's coordinator between batches): its calls during a long
        tree emit nothing, yet the tree's end may let it go on. An until-idle run ends
        once every spout has been dry for ``sparkstorm.idle.grace.secs``, counted from
        here, so that the grace runs while the last trees complete, not after them.

        ``-inf`` for a spout that says it is exhausted (:meth:`exhausted`): it needs no
        grace at all.
        """
        if self.exhausted():
            return -math.inf
        dry = self._dry
        if dry is None or not self._asked_since_outcome or dry[1] != self.collector.emitted:
            return None
        return dry[0]

    def exhausted(self) -> bool:
        """Whether the spout says it will emit nothing more (a :class:`CompletableSpout`).

        An ``is_exhausted`` that raises is reported once as the spout's error; from then
        on the task is never taken for exhausted, and an until-idle run waits its grace.
        """
        if not self._completable:
            return False
        self.calling = "is_exhausted"
        try:
            return bool(self.spout.is_exhausted())  # type: ignore[attr-defined]
        except Exception as exc:
            self.collector.report_error(exc)
            self._completable = False
            return False
        finally:
            self.calling = None

    def on_outcome(self, tup: Tuple, now: float) -> None:
        """Apply the acker's acks, fails or resets (one stream, many roots) in order."""
        self.now = now
        self._asked_since_outcome = False
        roots, details = tup.values
        stream, pending = tup.source_stream, self.pending
        if stream == ACKER_ACK_STREAM_ID and self.columnar and self.hooks is None:
            self._acked_many(roots)
            return
        for i, root in enumerate(roots):
            if stream == ACKER_RESET_TIMEOUT_STREAM_ID:
                entry = pending.get(root)
                if entry is not None:
                    pending.put(root, entry)
                continue
            entry = pending.remove(root)
            if entry is None:
                continue  # already timed out: the outcome comes too late and is ignored
            if stream == ACKER_ACK_STREAM_ID:
                self.stats.complete_latencies.append(now - entry[1])  # from emit to outcome
                self._call_ack(entry[0], entry[2], entry[1])
            elif stream == ACKER_FAIL_STREAM_ID:
                self._call_fail(entry[0], details[i], entry[2], entry[1])
        if len(self.stats.complete_latencies) >= FOLD_AT:  # memory stays bounded
            self.stats.fold()

    def _acked_many(self, roots: list[int]) -> None:
        """An Arrow spout's acks: its messages' trees completed, told in one call."""
        pending = self.pending
        assert isinstance(pending, PendingBatches)
        acked = pending.remove_acked(np.array(roots, np.uint64))
        ids, emitted, streams = acked.msg_ids, acked.emitted, acked.streams
        if acked.elsewhere:  # rows that left their batch (a reset), or acks come too late
            done = [e for e in RotatingMap.remove_many(pending, acked.elsewhere) if e is not None]
            ids += map(itemgetter(0), done)
            emitted = np.concatenate([emitted, np.fromiter(map(itemgetter(1), done), float)])
            for stream, n in Counter(map(itemgetter(2), done)).items():
                streams[stream] = streams.get(stream, 0) + n
        if not ids:
            return
        stats = self.stats
        stats.acked += len(ids)
        stats.complete_latencies.extend((self.now - emitted).tolist())
        for stream, n in streams.items():
            self._outcomes_of(stream)[0] += n
        if self._failed_last:
            for msg_id in ids:
                self._settled(msg_id, None)
        if self.collector.debug is not None and self.collector.debug.sampled():
            self.collector.debug.append(f"SPOUT Acking {len(ids)} messages, {ids[0]!r} first")
        self.guarded(self.spout.ack_batch, ids)  # type: ignore[attr-defined]
        if len(stats.complete_latencies) >= FOLD_AT:
            stats.fold()

    def tick(self) -> None:
        """The spout's timeout tick: rotate pending; what falls out fails with ``timeout``."""
        self.pending.rotate()

    def seal(self) -> None:
        """A checkpoint is prepared: the trees pending now are ready, and its outcome is theirs.

        Every tracked tree is ready at a prepare (all its tuples acked, some acks held by
        stateful bolts), so nothing but the checkpoint can decide it: the commit acks it
        (:meth:`ack_sealed`), a rollback fails it. Meanwhile it does not time out, or a
        message whose effect the commit holds would be replayed and counted again.
        """
        self.sealed = {root for root, _ in self.pending.items()}

    def ack_sealed(self, now: float) -> None:
        """The checkpoint is committed: ack the sealed trees still pending, at once.

        Not when the acker's ``commit`` outcome comes back: a superstep lost before then
        (an executor died) rolls back, and would fail trees whose effect is committed.
        """
        sealed, self.sealed, pending = self.sealed, set(), self.pending
        self._asked_since_outcome = False
        for root in sealed:
            entry = pending.remove(root)
            if entry is not None:
                self.stats.complete_latencies.append(now - entry[1])
                self._call_ack(entry[0], entry[2], entry[1])

    def fail_all_pending(self, reason: FailReason) -> None:
        """Fail every pending msg id with ``reason`` (shutdown: none is left without outcome).

        A spout that replays inside ``fail`` emits once more here; nothing runs after a
        shutdown, so those tuples are dropped, said in an error, and their msg ids forgotten.
        """
        self.fail_pending(reason)
        late = []
        for root, entry in self.pending.items():  # tracked by emits inside those fail()s
            self.pending.remove(root)
            late.append(entry[0])
        dropped = len(self.drain())
        if dropped:
            msg = (
                f"spout {self.component_id!r} task {self.task_id} emitted {dropped} tuple(s) "
                f"from ack/fail during shutdown; nothing runs after shutdown, so they were "
                f"not delivered, and msg ids {late[:10]!r} get no ack or fail"
            )
            self.collector.report_error(SparkStormError(msg))

    def fail_culprits(self, culprits: dict[int, FailReason]) -> None:
        """Fail the pending trees among ``culprits`` (root -> reason) with their reason.

        Before a rollback fails the rest with ``rollback``: a message whose processing
        called for the rollback fails as its own failure (an attempt, so a source's
        ``max_retries`` ends a poison message), the others replay without one.
        """
        for root, reason in culprits.items():
            entry = self.pending.remove(root)
            if entry is not None:
                self._call_fail(entry[0], reason, entry[2], entry[1])

    def fail_pending(self, reason: FailReason) -> None:
        """Fail every pending msg id with ``reason``; what ``fail`` emits is sent as usual."""
        self.sealed = set()
        for root, entry in list(self.pending.items()):
            self.pending.remove(root)
            self._call_fail(entry[0], reason, entry[2], entry[1])

    def _expired(self, root: int, entry: tuple[MsgId, float, str]) -> None:
        if root in self.sealed:  # the checkpoint decides it, within a superstep or two
            self.pending.put(root, entry)
            return
        self._call_fail(entry[0], TIMEOUT, entry[2], entry[1])

    def note_failed_keys(self) -> None:
        """Put the keys of the messages failed for good in the statistics, for the report.

        Up to :data:`FAILED_KEYS_CARRIED`, and only keys that surely pickle (text, numbers,
        bytes, tuples of them): a user's msg id may be any object. A key left out keeps
        its failure counted for good if the workers start again, never hides one.
        """
        last = self._failed_last
        if len(last) <= FAILED_KEYS_CARRIED and all(map(_travels, last)):
            self.stats.failed_keys = last
            return
        kept = (item for item in last.items() if _travels(item[0]))
        self.stats.failed_keys = dict(itertools.islice(kept, FAILED_KEYS_CARRIED))

    def carry_failures(self, counts: dict[str, int], keys: dict[Any, str]) -> None:
        """Take on what an earlier start of this task left failed for good.

        The continuous workers were lost or rebalanced, and the source redelivers: a
        replay acked here settles its message as it would have in the earlier start.
        ``counts`` may count more than ``keys`` holds (:meth:`note_failed_keys`).
        """
        self._failed_last = dict(keys)
        self._replay_pending = set(keys)  # this start replays them, or runs dry without
        pending = Counter(keys.values())
        self.stats.replay_pending = dict(pending)
        self.stats.failed_for_good = {
            kind: n - pending[kind] for kind, n in counts.items() if n > pending[kind]
        }  # keys not carried: counted for good, never hidden

    def _gave_up(self) -> None:
        """The spout ran dry: what failed before and was not emitted again, it gave up on.

        Ran dry: ``next_tuple`` emitted nothing, and the spout holds nothing back (a
        :class:`HoldsWork`'s retry waiting out its backoff is not dry).
        """
        pending, for_good = self.stats.replay_pending, self.stats.failed_for_good
        for key in self._replay_pending:
            kind = self._failed_last[key]
            pending[kind] -= 1
            if not pending[kind]:
                del pending[kind]
            for_good[kind] = for_good.get(kind, 0) + 1
        self._replay_pending = set()

    def _settled(self, msg_id: MsgId, failure: str | None) -> None:
        """Note ``msg_id``'s latest outcome: a failure of that kind, or (None) an ack.

        A message whose last outcome is a failure is *replay pending* until its spout
        runs dry without emitting it again (:meth:`_gave_up`), then *failed for good*; one
        acked after failing was replayed, and is counted so. The run's exit code follows
        the failures for good only: a stop that cuts a replay short is not a failure of
        the run, whatever its timing. A message is known by the spout's ``message_key``
        when it gives one: a broker's redelivery has a new msg id.
        """
        key: Any = self.message_key(msg_id)  # a replay may come under another msg id
        if key is None:
            key = msg_id
            try:
                hash(key)
            except TypeError:  # a list, a dict: its text stands for it
                key = repr(msg_id)
        last, replaying = self._failed_last, self._replay_pending
        before = last.pop(key, None)
        if before is not None:
            kinds = self.stats.replay_pending if key in replaying else self.stats.failed_for_good
            replaying.discard(key)
            kinds[before] -= 1
            if not kinds[before]:
                del kinds[before]
            if failure is None:
                self.stats.replayed_acked += 1
        if failure is not None:
            last[key] = failure
            replaying.add(key)
            kinds = self.stats.replay_pending
            kinds[failure] = kinds.get(failure, 0) + 1

    def _call_ack(
        self, msg_id: MsgId, stream: str | None = None, emitted_at: float | None = None
    ) -> None:
        self.stats.acked += 1
        if self._failed_last:
            self._settled(msg_id, None)
        if stream is not None:
            self._outcomes_of(stream)[0] += 1
        if self.collector.debug is not None and self.collector.debug.sampled():
            self.collector.debug.append(f"SPOUT Acking message {msg_id!r}")
        self.guarded(self.spout.ack, msg_id)
        if self.hooks is not None:  # after the spout's, as Storm's
            latency = None if emitted_at is None else (self.now - emitted_at) * 1000
            self.hooks("spout_ack", SpoutAckInfo(msg_id, self.task_id, latency))

    def _call_fail(
        self,
        msg_id: MsgId,
        reason: FailReason,
        stream: str | None = None,
        emitted_at: float | None = None,
    ) -> None:
        self._asked_since_outcome = False
        self.stats.failed += 1
        if stream is not None:
            self._outcomes_of(stream)[1] += 1
        kinds = self.stats.fail_reasons
        kinds[reason.kind] = kinds.get(reason.kind, 0) + 1
        self._settled(msg_id, reason.kind)
        if self.collector.debug is not None and self.collector.debug.sampled():
            self.collector.debug.append(f"SPOUT Failing {msg_id!r}: {reason}")
        if self._fail_takes_reason:
            self.guarded(self.spout.fail, msg_id, reason)
        else:
            self.guarded(self.spout.fail, msg_id)
        if self.hooks is not None:
            latency = None if emitted_at is None else (self.now - emitted_at) * 1000
            self.hooks("spout_fail", SpoutFailInfo(msg_id, self.task_id, latency))

    def _outcomes_of(self, stream: str) -> list[int]:
        """[acked, failed] trees emitted on ``stream`` (Storm UI's spout output stats)."""
        outcomes = self.stats.stream_outcomes.get(stream)
        if outcomes is None:
            outcomes = self.stats.stream_outcomes[stream] = [0, 0]
        return outcomes

    def call_under_way(self) -> tuple[str, Any] | None:
        """The spout's call running now and a progress marker (the watchdog's probe)."""
        if self.calling is None:
            return None
        where = f"{self.calling}() of spout {self.component_id!r} task {self.task_id}"
        return where, (self.collector.emitted, self.stats.acked, self.stats.failed)

    def guarded(self, method: Any, *args: Any) -> bool:
        """Call a spout method; report an exception with component and task, return False."""
        calling, self.calling = self.calling, method.__name__
        try:
            method(*args)
        except Exception as exc:
            self.collector.report_error(exc)
            return False
        finally:
            self.calling = calling
        return True


def all_dry_since(spouts: Collection[SpoutTask]) -> float | None:
    """Since when every one of ``spouts`` has been dry, or None while one is not.

    The latest of their :meth:`SpoutTask.dry_since`; ``-inf`` for no spouts.
    """
    since = [t for spout in spouts if (t := spout.dry_since()) is not None]
    if len(since) < len(spouts):
        return None
    return max(since, default=-math.inf)


def _travels(key: Any) -> bool:
    """Whether a failed message's key surely pickles into a report."""
    if type(key) is tuple:
        return all(map(_travels, key))
    return type(key) in _CARRIED_TYPES
