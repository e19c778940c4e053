"""Storm UI's input stats of a bolt task: executed, latencies, acked, failed per source.

A bolt that reads one stream only (the usual case) pays nothing: its figures per input
are its task's own, copied after each run (:func:`sole_input`). A bolt that reads more
than one (several subscriptions, tick tuples, a stateful or windowed bolt's system
tuples) is counted per tuple: its ``execute`` is timed one tuple at a time, and its
collector's ``ack`` and ``fail_with`` are wrapped, as ``topology.debug`` wraps them, so
that a single-input topology keeps its hot path.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sparkstorm._types import FailReason
from sparkstorm.config import TOPOLOGY_TICK_TUPLE_FREQ_SECS
from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.tasks.metrics import TaskStats
from sparkstorm.topology.components import is_stateful
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.tuple import Tuple
from sparkstorm.topology.windowing import is_windowed

EXECUTED, EXECUTE_SECS, ACKED, FAILED, PROCESS_SECS = range(5)
"""Positions in a :attr:`TaskStats.inputs` entry."""


def sole_input(plan: Plan, component_id: str) -> tuple[str, str] | None:
    """The one (component, stream) every tuple of ``component_id`` comes from, if one."""
    spec = plan.components[component_id]
    inputs = getattr(spec, "inputs", [])
    if (
        len(inputs) != 1
        or plan.component_conf(component_id).get(TOPOLOGY_TICK_TUPLE_FREQ_SECS)
        or is_stateful(spec.obj)
        or is_windowed(spec.obj)
    ):
        return None
    source = inputs[0][0]
    return source.component_id, source.stream_id


def copy_totals(stats: TaskStats, source: tuple[str, str]) -> None:
    """A single-input task's figures for its input: its own totals."""
    stats.inputs[source] = [
        stats.executed,
        stats.execute_secs,
        stats.acked,
        stats.failed,
        stats.process_secs,
    ]


def entry(stats: TaskStats, tup: Tuple) -> list[float]:
    """The figures of the input ``tup`` came from (created at the first tuple)."""
    source = (tup.source_component, tup.source_stream)
    figures = stats.inputs.get(source)
    if figures is None:
        figures = stats.inputs[source] = [0, 0.0, 0, 0, 0.0]
    return figures


def count_outcomes(collector: OutputCollector, stats_of: Callable[[], TaskStats]) -> None:
    """Count each ack and fail of ``collector`` against the input of the tuple it names.

    ``stats_of`` gives the task's statistics now (a restored task gets new ones).
    """
    ack, fail_with, wall = collector.ack, collector.fail_with, time.time

    def counting_ack(tup: Tuple) -> None:
        figures = stats_of().inputs.get((tup.source_component, tup.source_stream))
        if figures is None:
            figures = entry(stats_of(), tup)
        figures[ACKED] += 1
        if tup.received_at:
            figures[PROCESS_SECS] += wall() - tup.received_at
        ack(tup)

    def counting_fail_with(tup: Tuple, reason: FailReason) -> None:
        entry(stats_of(), tup)[FAILED] += 1
        fail_with(tup, reason)

    collector.ack = counting_ack  # type: ignore[method-assign]
    collector.fail_with = counting_fail_with  # type: ignore[method-assign]
