"""How many ``next_tuple`` calls a spout task gets per superstep: adapted to a target duration.

Every superstep pays a fixed cost (a Spark job: ~0.15-0.3 s on a small machine) plus a
cost per tuple. Few calls per superstep and the fixed cost sets the pace; many and each
superstep (so each tree, which needs several) takes long. Like the rate controllers of
Spark's streaming engines, the sizer watches how long each superstep took with the batch
it carried, and scales the next batch by ``target / took``, at most 4x up or 2x down per
superstep, so a superstep stays near the target duration. With a fixed cost per
superstep, ``target / took`` under-estimates the batch that fills the target, so growing
by that ratio approaches it from below without overshooting; the cap only guards against
one noisy measurement. Pipelined, a result arrives after the next superstep was launched
with the same batch, so each growth shows two supersteps later: a fast ramp matters.

A superstep's duration reflects more than its own spout batch: it also carries the
previous batches' tuples one hop further (a word count's superstep splits this batch's
sentences and counts the last batch's words, eight times as many tuples). So the ratio
scales the mean of the last two observed batches; scaling the one batch made them
alternate, large and small (measured on Spark: 32,000 / 9,000 sentences).

It grows only on evidence: when a spout task used every call it was given. A spout that
has less to offer (a steady source below capacity) keeps its supersteps short on its own,
which is what keeps trees fast at moderate load. ``topology.max.spout.pending`` still
bounds what a task may have pending, whatever the batch.
"""

from __future__ import annotations

from collections import deque

START_BATCH = 1000
"""About one fixed superstep cost's worth of work on Spark: the ramp starts near the knee."""
MAX_BATCH = 100_000
MAX_GROWTH = 4.0
"""The most a batch grows from one superstep to the next."""
MAX_SHRINK = 2.0
"""The most a batch shrinks from one superstep to the next."""


class SpoutBatchSizer:
    """The per-task ``next_tuple`` budget of each superstep (driver side, one per topology).

    Parameters
    ----------
    target_secs
        The superstep duration to aim at.
    fixed
        A batch the user set (``sparkstorm.superstep.spout.batch``): never adapted.
    max_pending
        ``topology.max.spout.pending``: a batch never exceeds it.
    """

    def __init__(
        self, target_secs: float, fixed: int | None = None, max_pending: int | None = None
    ) -> None:
        self.target_secs = target_secs
        self.fixed = fixed
        self._ceiling = min(MAX_BATCH, max_pending or MAX_BATCH)
        self.batch = fixed if fixed is not None else min(START_BATCH, self._ceiling)
        self._recent: deque[int] = deque(maxlen=2)

    def observe(self, batch: int, saturated: bool, took_secs: float) -> None:
        """Learn from one finished superstep, launched with ``batch`` calls per spout task.

        ``saturated``: some spout task made every call it was allowed and emitted on each.
        """
        if self.fixed is not None or took_secs <= 0:
            return
        self._recent.append(batch)
        ratio = self.target_secs / took_secs
        if ratio > 1 and not saturated:
            return  # short because the spouts had less to give: no reason to grow
        ratio = min(MAX_GROWTH, max(1 / MAX_SHRINK, ratio))
        load = sum(self._recent) / len(self._recent)
        self.batch = max(1, min(self._ceiling, round(load * ratio)))
