"""When tasks tick: spout timeouts, the acker's rotations and bolts' tick tuples.

Storm's executors each keep a timer. Here whatever runs tasks keeps a list of
:class:`Ticker` (the superstep loop for all tasks on the driver, a continuous worker for
its own) and asks :func:`due` at each turn what fell due by topology time ``now``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkstorm.config import (
    TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    TOPOLOGY_TICK_TUPLE_FREQ_SECS,
)
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.tuple import Row, tick_tuple


@dataclass
class Ticker:
    """Something that ticks every ``freq`` seconds of topology time: spouts or bolt tasks.

    A bolt's ticker fires at most once per turn, as Storm's timer does under load: a
    bolt that fell behind gets one tick, not a burst of stale ones, and the next is due
    ``freq`` after it. The timeout tickers (spouts', ackers') catch up instead: they
    only rotate bookkeeping, and a late rotation would delay every timeout.
    """

    freq: float
    next_due: float
    tasks: list[int]  # empty: the spout timeout tick
    catch_up: bool = True


def tickers_for(plan: Plan, conf: dict[str, Any], tasks: set[int] | None = None) -> list[Ticker]:
    """The tickers of ``plan``'s tasks (of ``tasks`` only, when given)."""

    def mine(task_ids: list[int]) -> list[int]:
        return task_ids if tasks is None else [t for t in task_ids if t in tasks]

    tickers = []
    timeout = conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS]
    if conf[TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS] and plan.num_ackers:
        tickers.append(Ticker(timeout, timeout, []))
        if mine(plan.acker_tasks):
            tickers.append(Ticker(timeout, timeout, mine(plan.acker_tasks)))
    for bolt in plan.topology.bolts:
        freq = plan.component_conf(bolt.component_id)[TOPOLOGY_TICK_TUPLE_FREQ_SECS]
        if freq and mine(plan.component_tasks(bolt.component_id)):
            tickers.append(Ticker(freq, freq, mine(plan.component_tasks(bolt.component_id)), False))
    return tickers


def due(tickers: list[Ticker], now: float) -> tuple[list[Row], int]:
    """Tick tuples due by ``now`` for bolt and acker tasks, and how many spout ticks."""
    rows: list[Row] = []
    spout_ticks = 0
    for ticker in tickers:
        while now >= ticker.next_due:
            ticker.next_due += ticker.freq
            if not ticker.catch_up and ticker.next_due <= now:
                ticker.next_due = now + ticker.freq
            if ticker.tasks:
                rows.extend((task, tick_tuple(ticker.freq)) for task in ticker.tasks)
            else:
                spout_ticks += 1
    return rows, spout_ticks
