"""What the coordinator tells an operator about its batches (Storm UI shows none of it).

The coordinator registers a :class:`BatchWatch` as its metric ``trident``, read every
second like any registered metric; the driver shows its latest value in the live table,
on the page and in the REST API (``"trident"`` in the topology route).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from sparkstorm.topology.metrics import SinceStart

METRIC = "trident"
RECENT = 100
"""Latencies and sizes are of the last this many batches."""


class BatchWatch:
    """The batches' progress: txids, in flight, attempts, sizes, latencies, replays."""

    def __init__(self, batches: dict[int, Any]) -> None:
        self.batches = batches
        """The coordinator's batches in flight (each with its ``attempt``), read at each report."""
        self.txid = 0
        """The newest txid started."""
        self.committed = 0
        self.replays = 0
        """Batches emitted again after a failure or a timeout (each later one counts)."""
        self.committed_batches = 0
        self.empty_batches = 0
        self.drpc_requests = 0
        self.halted: str | None = None
        self.sizes: deque[int] = deque(maxlen=RECENT)
        self.processing: deque[float] = deque(maxlen=RECENT)
        self.commits: deque[float] = deque(maxlen=RECENT)
        self._emitted: dict[int, tuple[float, int]] = {}
        self._committing: dict[int, float] = {}

    def emitted(self, txid: int, attempt: int, tuples: int) -> None:
        """Batch ``txid`` (attempt ``attempt``) left the coordinator with ``tuples`` tuples."""
        self.txid = max(self.txid, txid)
        if attempt:
            self.replays += 1
        self._emitted[txid] = (time.monotonic(), tuples)

    def processed(self, txid: int) -> None:
        """Every task finished batch ``txid``."""
        started = self._emitted.pop(txid, None)
        if started is not None:
            self.processing.append(time.monotonic() - started[0])
            self.sizes.append(started[1])

    def committing(self, txid: int) -> None:
        """Batch ``txid``'s commit tuple left."""
        self._committing[txid] = time.monotonic()

    def committed_now(self, txid: int, empty: bool) -> None:
        """Batch ``txid`` committed (an empty one at once)."""
        self.committed = txid
        self._emitted.pop(txid, None)
        started = self._committing.pop(txid, None)
        if started is not None:
            self.commits.append(time.monotonic() - started)
        if empty:
            self.empty_batches += 1
        else:
            self.committed_batches += 1

    def get_value_and_reset(self) -> dict[str, Any]:
        """The figures now (gauges and counts since the start: nothing resets)."""
        return BatchFigures(
            {
                "txid": self.txid,
                "committedTxid": self.committed,
                "inFlight": len(self.batches),
                "maxAttempt": max((b.attempt for b in self.batches.values()), default=0),
                "replays": self.replays,
                "committedBatches": self.committed_batches,
                "emptyBatches": self.empty_batches,
                "batchTuples": _median(self.sizes),
                "processingMsP50": _ms(_median(self.processing)),
                "processingMsP99": _ms(_quantile(self.processing, 0.99)),
                "commitMsP50": _ms(_median(self.commits)),
                "commitMsP99": _ms(_quantile(self.commits, 0.99)),
                "drpcRequests": self.drpc_requests,
                "halted": self.halted,
            }
        )


class BatchFigures(SinceStart):
    """The coordinator's figures: counts and txids go on across its restarts."""

    COUNTS = ("replays", "committedBatches", "emptyBatches", "drpcRequests")
    HIGHEST = ("txid", "committedTxid")


def _quantile(values: deque[Any], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def _median(values: deque[Any]) -> float:
    return _quantile(values, 0.5)


def _ms(secs: float) -> float:
    return round(1000 * secs, 1)
