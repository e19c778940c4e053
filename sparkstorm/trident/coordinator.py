"""``Coordinator``: the spout that runs a Trident topology's batches.

It is Storm's master batch coordinator, with the batch spouts and DRPC requests it emits.

Batch ``txid`` goes through two phases, each one tree the acker tracks:

1. *processing*: the coordinator asks every batch spout for the batch's tuples and sends
   one message to every task of the bolts they feed. The batch is processed once every
   message's tree completed.
2. *commit*: strictly in txid order, once batch ``txid - 1`` committed, one commit tuple
   goes to every task holding a state; each writes its partition and acks. Then the
   spouts are told (``ack(txid)``).

Up to ``topology.max.spout.pending`` batches are in flight at once. A failed or
timed-out tree replays its batch and every later one in flight, under the same txids
and the next attempt. A batch in which no spout emitted anything is committed here at
once (no state has anything to write); dry spouts are asked again after
``topology.trident.batch.emit.interval.millis``.

Txids only go forward, across restarts and rebalances too. An empty batch costs no
store write, so the progress is written for one in :data:`EMPTY_KEPT_EVERY` only, with
the txid a restart may resume from when nothing was in flight: past every empty txid
committed until the next such write. (A restarted coordinator once resumed at the last
batch with tuples, and the txid stood still while it went over the empty ones again.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sparkstorm._types import counts_as_attempt
from sparkstorm.config import (
    SPARKSTORM_DRPC_FUNCTIONS,
    SPARKSTORM_DRPC_SERVER,
    SPARKSTORM_TRIDENT_MAX_ATTEMPTS,
    TOPOLOGY_ACKER_EXECUTORS,
    TOPOLOGY_MAX_SPOUT_PENDING,
    TOPOLOGY_TRIDENT_BATCH_EMIT_INTERVAL_MILLIS,
)
from sparkstorm.errors import BatchFailedTooOften
from sparkstorm.topology.components import ChecksSubmission, HoldsWork, Spout, UsesRunMemory
from sparkstorm.topology.declarers import OutputFieldsDeclarer
from sparkstorm.trident.drpc import server_of
from sparkstorm.trident.nodes import CUSTOM, TX, Row
from sparkstorm.trident.progress import (
    DRIVER,
    Progress,
    Stored,
    identity,
    progress_store,
    shown_where,
)
from sparkstorm.trident.sources import BatchSource
from sparkstorm.trident.tuple import TridentCollector
from sparkstorm.trident.watching import METRIC, BatchWatch
from sparkstorm.trident.wiring import (
    COMMIT_FIELDS,
    COMMIT_STREAM,
    SHARE_FIELDS,
    BatchKey,
    Edge,
    custom_chooser,
    deal,
)

COORDINATOR = "trident-coordinator"
"""The coordinator's component id."""
PROCESSING, PROCESSED, COMMITTING, WRITTEN = "processing", "processed", "committing", "written"
EMPTY_KEPT_EVERY = 100
"""Empty batches committed between two writes of the progress (see the module's text)."""
RETRY_SECS = 0.25
"""After a spout or the checkpoint store failed, how long before a batch is emitted again
(within ``sparkstorm.idle.grace.secs``, so an until-idle run does not end on the wait)."""
DRPC_POLL_SECS = 0.002
"""How often the DRPC servers are asked for requests (a call to another process)."""


@dataclass
class _Batch:
    txid: int
    attempt: int = 0
    state: str = PROCESSING
    outstanding: int = 0
    empty: bool = False
    sent: bool = False
    failures: int = 0
    replayed: bool = False
    """Emitted again from kept metadata (a restart's batch in flight), not a new poll."""
    unkept: bool = False
    """Its spouts' new metadata is not in the checkpoint store yet (the store failed)."""


class Coordinator(Spout, ChecksSubmission, HoldsWork, UsesRunMemory):
    """Emits the batches of every Trident spout and DRPC function of one topology."""

    def __init__(
        self,
        spouts: dict[str, BatchSource],
        spout_edges: dict[str, list[Edge]],
        drpc: dict[str, Any],
        drpc_edges: dict[str, list[Edge]],
        states: list[tuple[str, Stored]],
        committers: bool,
        commit_empty: bool = False,
    ) -> None:
        self.spouts = spouts
        self.spout_edges = spout_edges
        self.drpc = drpc
        self.drpc_edges = drpc_edges
        self.states = states
        """The states and windows the batches are written into: (label, factory)."""
        self.committers = committers
        """Whether a task writes anything in a commit (a persist, a window)."""
        self.commit_empty = commit_empty
        """Whether an empty batch is committed through the tasks too (a window by time)."""

    def check_submission(self, conf: dict[str, Any]) -> None:
        """Refuse a topology whose progress has no place that lives as long as its states.

        Also one whose progress on the driver's disk (kept by the name alone on this
        machine) is another topology's of the same name.
        """
        store, _ = progress_store(conf, self.states)
        if store.provider == DRIVER:  # keyed by the name alone on this machine
            Progress.open(conf, self.states, identity(self.spouts, self.states))

    def progress_where(self, conf: dict[str, Any]) -> str:
        """Where the topology's progress is kept, for the run's start line."""
        return shown_where(*progress_store(conf, self.states))

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """One direct stream per edge out, and the commit stream."""
        for edges in [*self.spout_edges.values(), *self.drpc_edges.values()]:
            for edge in edges:
                declarer.declare(SHARE_FIELDS, edge.stream, direct=True)
        declarer.declare(COMMIT_FIELDS, COMMIT_STREAM)

    def get_component_configuration(self) -> dict[str, Any]:
        """Every message of a batch is a tracked tree: the coordinator keeps its own limit.

        The DRPC functions given no server are named, for the run to serve them.
        """
        served = [f for f, server in self.drpc.items() if server is None]
        return {TOPOLOGY_MAX_SPOUT_PENDING: None, SPARKSTORM_DRPC_FUNCTIONS: served}

    def holding(self) -> str | None:
        """A batch waiting to be emitted again, or for its commit to be kept, if one is."""
        if getattr(self, "halted", None) is not None:  # it stays so: nothing to wait for
            return None
        batches = getattr(self, "batches", {}).values()  # none before open
        held = sorted(b.txid for b in batches if not b.sent or b.state == WRITTEN)
        return f"Trident batch {held[0]} waits to be emitted or kept again" if held else None

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        """Open the batch spouts; read the limits."""
        if not conf[TOPOLOGY_ACKER_EXECUTORS]:
            msg = (
                "a Trident topology needs ackers to know when a batch is processed: "
                "set topology.acker.executors to 1 or more"
            )
            raise ValueError(msg)
        self.collector = collector
        self.max_pending = context.get_topology_conf().get(TOPOLOGY_MAX_SPOUT_PENDING) or 1
        self.interval = conf[TOPOLOGY_TRIDENT_BATCH_EMIT_INTERVAL_MILLIS] / 1000
        self.max_attempts = conf[SPARKSTORM_TRIDENT_MAX_ATTEMPTS]
        edges = [e for out in [*self.spout_edges.values(), *self.drpc_edges.values()] for e in out]
        self.targets = {e.edge_id: context.get_component_tasks(e.to_component) for e in edges}
        task = context.get_this_task_id()
        self.choosers = {
            e.edge_id: custom_chooser(
                e.partitioning.grouping,
                COORDINATOR,
                e.stream,
                task,
                self.targets[e.edge_id],
                context,
            )
            for e in edges
            if e.partitioning.kind == CUSTOM
        }
        self.batches: dict[int, _Batch] = {}
        self.progress = Progress.open(conf, self.states, identity(self.spouts, self.states))
        self.committed = max(self.progress.committed(), self.progress.resume_at() - 1)
        self.next_txid = self.committed + 1
        self.kept_txid = self.committed
        """The last txid the progress was written for."""
        self.dry_until = 0.0
        self.retry_at = 0.0
        self.halted: str | None = None
        self.drpc_polled = 0.0
        self.requests: dict[int, tuple[str, int]] = {}
        """DRPC request id -> (function, messages outstanding)."""
        self.watch = context.register_metric(METRIC, BatchWatch(self.batches), 1)
        self.servers = {
            f: server
            for f, given in self.drpc.items()
            if (server := server_of(given, conf[SPARKSTORM_DRPC_SERVER])) is not None
        }
        for spout in self.spouts.values():
            spout.open(conf, context)
        kept = self.progress.spouts()
        for tx_id, spout in self.spouts.items():
            if tx_id in kept:
                spout.restore(kept[tx_id])

    def close(self) -> None:
        """Close the batch spouts."""
        for spout in self.spouts.values():
            spout.close()

    def next_tuple(self) -> None:
        """Commit what may commit, replay what failed, start new batches and requests."""
        self._sync()
        now = time.monotonic()
        if self.servers and now >= self.drpc_polled + DRPC_POLL_SECS:
            self.drpc_polled = now
            for function, server in self.servers.items():
                for request, args in server.take(function):
                    self._request(function, request, args)

    # -- batches ---------------------------------------------------------------------
    def _sync(self) -> None:
        if self.halted is not None:  # a stopped topology commits nothing, still answers queries
            return
        self._commit_ready()
        if time.monotonic() < self.retry_at:  # a spout's source or the store failed: wait
            return
        for batch in sorted(self.batches.values(), key=lambda b: b.txid):
            if not batch.sent and not self._emit(batch):
                return  # held: no later batch may read on from metadata not yet kept
        while (
            len(self.batches) < self.max_pending
            and time.monotonic() >= self.dry_until
            and self._ready(self.next_txid)
        ):
            batch = self.batches[self.next_txid] = _Batch(self.next_txid)
            self.next_txid += 1
            if not self._emit(batch):
                return
            if batch.empty:
                self._commit_ready()
                if not batch.replayed:  # the spouts are dry: ask them again later
                    self.dry_until = time.monotonic() + self.interval
                    break

    def _ready(self, txid: int) -> bool:
        """Whether every spout that can say so has a batch for ``txid``."""
        ready = all(s.is_ready(txid) for s in self.spouts.values())
        if not ready:
            self.dry_until = time.monotonic() + self.interval
        return ready

    def _commit_ready(self) -> None:
        """Commit the next batch in txid order if it is processed (at once if empty)."""
        while batch := self.batches.get(self.committed + 1):
            if batch.state == WRITTEN:  # its progress could not be kept: try again
                if time.monotonic() < self.retry_at or not self._finish(batch):
                    return
                continue
            if batch.state != PROCESSED:
                return
            if (batch.empty and not self.commit_empty) or not self.committers:
                self._finish(batch)
                continue
            batch.state = COMMITTING
            batch.outstanding = 1
            self.watch.committing(batch.txid)
            key: BatchKey = (TX, batch.txid, batch.attempt, True)
            commit = (batch.txid, batch.attempt, batch.empty)
            self.collector.emit([commit], (key, 0), COMMIT_STREAM)
            return

    def _emit(self, batch: _Batch) -> bool:
        """Ask the spouts for the batch's tuples and send them; False if it must wait.

        Whether a batch is empty is decided by the attempt being emitted: a replay of a
        batch that had nothing may read what arrived since (an opaque or a core spout).
        """
        batch.sent = True
        rows: dict[str, list[Row]] = {}
        for tx_id, spout in self.spouts.items():
            collector = TridentCollector()
            try:
                emitted = spout.emit_batch(batch.txid, collector)
            except Exception as exc:  # its source is down, say: the whole batch waits
                self._hold(batch, f"spout {tx_id!r} could not emit it", exc)
                return False
            batch.unkept |= bool(emitted)
            batch.replayed |= emitted is False
            rows[tx_id] = collector.part()  # rows, or a columnar spout's record batch
        self.watch.emitted(batch.txid, batch.attempt, sum(map(len, rows.values())))
        batch.empty = not any(len(part) for part in rows.values())
        if batch.empty:
            batch.state = PROCESSED
            return True
        if batch.unkept and not self._keep(batch):  # ranges stored before any tuple leaves
            return False
        key: BatchKey = (TX, batch.txid, batch.attempt, False)
        batch.outstanding = self._send(key, [(self.spout_edges[t], r) for t, r in rows.items()])
        if batch.outstanding == 0:
            self._processed(batch)
        return True

    def _send(self, key: BatchKey, what: list[tuple[list[Edge], list[Row]]]) -> int:
        sent = 0
        for edges, rows in what:
            for edge in edges:
                targets = self.targets[edge.edge_id]
                choose = self.choosers.get(edge.edge_id)
                shares = deal(rows, edge.partitioning, len(targets), key[1], 0, choose)
                for task, share in zip(targets, shares, strict=True):
                    self.collector.emit_direct(task, [key, share], (key, sent), edge.stream)
                    sent += 1
        return sent

    def _keep(self, batch: _Batch) -> bool:
        """Store the spouts' new metadata; if the store fails, emit the batch again later."""
        try:
            self.progress.commit(self.committed, self._metadata())
        except Exception as exc:
            why = "the checkpoint store failed; its ranges must be kept before it is emitted"
            self._hold(batch, why, exc)
            return False
        batch.unkept = False
        return True

    def _hold(self, batch: _Batch, why: str, exc: Exception) -> None:
        """Emit ``batch`` again in a moment (nothing of it left), saying why."""
        batch.sent = False
        self.retry_at = time.monotonic() + RETRY_SECS
        self.collector.report_error(
            ConnectionError(
                f"Trident batch {batch.txid}: {why} ({type(exc).__name__}: {exc}); trying "
                f"again in {RETRY_SECS:g} s"
            )
        )

    def _metadata(self) -> dict[str, Any]:
        kept = {t: s.snapshot() for t, s in self.spouts.items()}
        return {t: saved for t, saved in kept.items() if saved is not None}

    def _processed(self, batch: _Batch) -> None:
        batch.state = PROCESSED
        self.watch.processed(batch.txid)

    def _finish(self, batch: _Batch) -> bool:
        """Every state wrote ``batch``: keep the progress, then tell the spouts.

        False if the progress could not be kept: nothing is acked, and nothing later
        commits, until it is.
        """
        batch.state = WRITTEN
        txid = batch.txid
        for spout in self.spouts.values():
            spout.committed(txid)
        # an empty batch wrote nothing and moved no range: kept only now and then
        if not batch.empty or txid - self.kept_txid >= EMPTY_KEPT_EVERY:
            quiet = all(t <= txid for t in self.batches)  # no later batch to replay
            resume = txid + EMPTY_KEPT_EVERY if quiet else None
            try:
                self.progress.commit(txid, self._metadata(), resume)
            except Exception as exc:
                self.retry_at = time.monotonic() + RETRY_SECS
                self.collector.report_error(
                    ConnectionError(
                        f"Trident batch {txid}: the checkpoint store failed to keep its "
                        f"commit ({type(exc).__name__}: {exc}); nothing is acked to the "
                        f"spouts, or committed after it, until it is: trying again in "
                        f"{RETRY_SECS:g} s"
                    )
                )
                return False
            self.kept_txid = txid
        self.committed = txid
        del self.batches[txid]
        self.watch.committed_now(txid, batch.empty)
        for spout in self.spouts.values():
            spout.ack(txid)
        return True

    def ack(self, msg_id: Any) -> None:
        """A message's tree completed: its batch may be processed, or committed."""
        key: BatchKey = msg_id[0]
        if isinstance(key[0], tuple):  # a DRPC request's message
            self._request_done(key[1])
            return
        _, txid, attempt, commit_phase = key
        batch = self.batches.get(txid)
        if batch is None or batch.attempt != attempt:
            return  # an older attempt's
        batch.outstanding -= 1
        if batch.outstanding > 0:
            return
        if commit_phase:
            self._finish(batch)
        else:
            self._processed(batch)
        self._sync()

    def fail(self, msg_id: Any, reason: Any = None) -> None:
        """A message's tree failed: its batch, and every later one in flight, are replayed."""
        key: BatchKey = msg_id[0]
        if isinstance(key[0], tuple):
            self._request_failed(key[1], reason)
            return
        _, txid, attempt, _ = key
        batch = self.batches.get(txid)
        if batch is None or batch.attempt != attempt or self.halted is not None:
            return
        if counts_as_attempt(reason):
            batch.failures += 1
            if batch.failures >= self.max_attempts:
                self._halt(txid, batch.failures, reason)
                return
        for later in self.batches.values():
            if later.txid >= txid:
                later.attempt += 1
                later.state = PROCESSING
                later.sent = False
                later.outstanding = 0
        self._sync()

    def _halt(self, txid: int, failures: int, reason: Any) -> None:
        """A batch failed too often: stop here, saying why, before anything after it commits."""
        self.halted = (
            f"Trident batch {txid} failed {failures} times "
            f"(sparkstorm.trident.max.attempts); the last failure: {reason}. Nothing after "
            f"it was committed; a restart resumes from it"
        )
        self.watch.halted = self.halted
        self.collector.report_error(BatchFailedTooOften(self.halted))
        for spout in self.spouts.values():
            spout.halt(self.halted)

    # -- DRPC ------------------------------------------------------------------------
    def _request(self, function: str, request: int, args: str) -> None:
        self.watch.drpc_requests += 1
        key: BatchKey = (("drpc", function), request, 0, False)
        sent = self._send(key, [(self.drpc_edges[function], [[args]])])
        self.requests[request] = (function, sent)
        if sent == 0:
            self._request_done(request)

    def _request_done(self, request: int) -> None:
        entry = self.requests.get(request)
        if entry is None:
            return
        function, outstanding = entry
        if outstanding > 1:
            self.requests[request] = (function, outstanding - 1)
            return
        del self.requests[request]

    def _request_failed(self, request: int, reason: Any) -> None:
        entry = self.requests.pop(request, None)
        if entry is not None:
            self.servers[entry[0]].fail(request, f"its batch failed ({reason})")
