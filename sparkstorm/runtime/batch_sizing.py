"""How many ``next_tuple`` calls a spout task gets per superstep: adapted to a target duration.

Every superstep pays a fixed cost (a Spark job: ~0.15-0.3 s on a small machine) plus a
cost per tuple. Few calls per superstep and the fixed cost sets the pace; many and each
superstep (so each tree, which needs several) takes long. Like the rate controllers of
Spark's streaming engines, the sizer watches how long each superstep took with the batch
it carried, and scales the next batch by ``target / took``, at most doubling or halving
per superstep, so a superstep stays near the target duration.

It grows only on evidence: when a spout task used every call it was given. A spout that
has less to offer (a steady source below capacity) keeps its supersteps short on its own,
which is what keeps trees fast at moderate load. ``topology.max.spout.pending`` still
bounds what a task may have pending, whatever the batch.
"""

from __future__ import annotations

START_BATCH = 64
MAX_BATCH = 100_000
MAX_STEP = 2.0
"""The most a batch grows, or (inverted) shrinks, from one superstep to the next."""


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

    def observe(self, batch: int, saturated: bool, took_secs: float) -> None:
        """Learn from one finished superstep, launched with ``batch`` calls per spout task.

        ``saturated``: some spout task made every call it was allowed and emitted on each.
        """
        if self.fixed is not None or took_secs <= 0:
            return
        ratio = self.target_secs / took_secs
        if ratio > 1 and not saturated:
            return  # short because the spouts had less to give: no reason to grow
        ratio = min(MAX_STEP, max(1 / MAX_STEP, ratio))
        self.batch = max(1, min(self._ceiling, round(batch * ratio)))
