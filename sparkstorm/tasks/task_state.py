"""Bolt state across supersteps: snapshot a task's attributes, restore them elsewhere.

A snapshot holds the component's attributes except those named in ``transient`` and
the engine-owned objects (collector, context, conf, per-process shared resources), plus
the task's statistics. To
restore, a fresh copy of the component is prepared (so ``prepare`` re-creates clients
and re-binds the collector) and the snapshot is laid over it.
"""

from __future__ import annotations

import pickle
from typing import Any

from sparkstorm.errors import ComponentStateError
from sparkstorm.reliability.collectors import BasicOutputCollector
from sparkstorm.state.key_value import KeyValueState
from sparkstorm.tasks.arrow_windowed import WindowedBatchCollector
from sparkstorm.tasks.metrics import TaskStats
from sparkstorm.tasks.pickling import dumps
from sparkstorm.tasks.stateful import PERSISTENT_WINDOWS, StatefulBoltExecutor
from sparkstorm.tasks.task_runner import BasicBoltExecutor, BoltTask
from sparkstorm.tasks.windowed import (
    WindowedBoltExecutor,
    WindowedOutputCollector,
)
from sparkstorm.topology.shared_resources import is_shared

_STATEFUL = "__sparkstorm_stateful__"
"""A stateful task's snapshot entry: its KeyValueState and its collector's input count."""
_WINDOW = "__sparkstorm_window__"
_METRICS = "__sparkstorm_metrics__"
"""A windowed task's snapshot entry: the tuples in its windows, its watermark."""


def _user_object(task: BoltTask) -> Any:
    bolt: Any = task.bolt
    while isinstance(bolt, BasicBoltExecutor | StatefulBoltExecutor | WindowedBoltExecutor):
        bolt = bolt.delegate
    return bolt


def _is_engine_owned(value: Any, task: BoltTask) -> bool:
    return (
        value is task.collector
        or value is task.context
        or value is task.conf
        or isinstance(
            value, BasicOutputCollector | WindowedOutputCollector | WindowedBatchCollector
        )
        or is_shared(value)
    )


def snapshot(task: BoltTask) -> bytes:
    """Serialize the task's persistent attributes and statistics.

    The attributes are pickled first, so their size is counted in the statistics that
    travel with them (``snapshots``, ``state_bytes``, ``snapshot_bytes``).

    Raises
    ------
    ComponentStateError
        Naming the bolt, the task and the attribute that cannot be pickled.
    """
    obj = _user_object(task)
    transient = set(getattr(obj, "transient", ()))
    state = {
        name: value
        for name, value in vars(obj).items()
        if name not in transient and not _is_engine_owned(value, task)
    }
    bolt = task.bolt
    if isinstance(bolt, StatefulBoltExecutor):  # pickled with the attributes: one object
        collector = bolt.collector
        state[_STATEFUL] = (bolt.state, bolt.windows, collector.unacked, collector.rolled_back_at)
        bolt = bolt.delegate
    if isinstance(bolt, WindowedBoltExecutor):  # one pickle: the tuples stay shared
        state[_WINDOW] = bolt.window_state()
    if task.registered is not None:  # one pickle: the bolt's metrics stay the ones read
        state[_METRICS] = task.registered
    try:
        pickled = pickle.dumps(state, protocol=5)
    except Exception:
        stateful = task.bolt
        if isinstance(stateful, StatefulBoltExecutor) and stateful.quarantine(dumps):
            stateful.report_stats(task.stats)  # the failure and its culprits, this superstep
            return snapshot(task)  # what the state cannot hold is out, its trees blamed
        pickled = _cloudpickled(task, state)
    stats = task.stats
    stats.snapshots += 1
    stats.state_bytes = len(pickled)
    stats.snapshot_bytes += len(pickled)
    return pickle.dumps((pickled, stats), protocol=5)


def _cloudpickled(task: BoltTask, state: dict[str, Any]) -> bytes:
    """``state`` pickled by value (classes from ``__main__``...), or the attribute at fault."""
    try:
        return dumps(state)
    except Exception as exc:
        name = _culprit(state)
        for held in _states_in(state.get(name)):
            said = held.unpicklable(dumps)
            if said is not None:  # a value inside KeyValueState: init_state made it
                raise ComponentStateError(said) from exc
        msg = (
            f"bolt {task.component_id!r} (task {task.task_id}): attribute {name!r} "
            f"({type(state.get(name)).__name__}) cannot be pickled for the bolt's state "
            f"snapshot ({exc}); add it to `transient` (transient = ({name!r},)) and "
            f"create it in prepare()"
        )
        raise ComponentStateError(msg) from exc


def _states_in(value: Any) -> list[KeyValueState]:
    """The KeyValueStates ``value`` is or holds (a stateful executor's entry is a tuple)."""
    values = value if isinstance(value, tuple) else (value,)
    return [v for v in values if isinstance(v, KeyValueState)]


def _culprit(state: dict[str, Any]) -> str:
    for name, value in state.items():
        try:
            dumps(value)
        except Exception:
            return name
    return "?"


def restore(task: BoltTask, data: bytes) -> None:
    """Lay a snapshot over a prepared task: a fresh copy, or an older resident instance.

    The snapshot's attributes replace the instance's; an attribute the snapshot lacks
    (deleted since) goes, except ``transient`` and engine-owned ones, which the instance
    keeps: its clients survive. The task's counters continue from the snapshot's.
    """
    pickled, stats = pickle.loads(data)
    state = pickle.loads(pickled)
    executor = task.bolt
    if isinstance(executor, StatefulBoltExecutor):
        kv, windows, unacked, rolled_back_at = state.pop(_STATEFUL)
        for new, old in ((kv, executor.state), (windows, executor.windows)):
            if isinstance(new, KeyValueState) and isinstance(old, KeyValueState):
                new.adopt(old)  # this instance's committed data, when still current
        executor.state = kv
        if isinstance(executor.delegate, PERSISTENT_WINDOWS):
            executor.delegate.kv = windows  # before the windows are rebuilt from it
        executor.collector.unacked, executor.collector.rolled_back_at = unacked, rolled_back_at
        executor.restore_counters(stats)
        executor = executor.delegate
    if isinstance(executor, WindowedBoltExecutor):
        executor.restore_window_state(state.pop(_WINDOW))
    registered = state.pop(_METRICS, None)
    if registered is not None:
        task.registered = registered
    obj = _user_object(task)
    attributes = vars(obj)
    transient = set(getattr(obj, "transient", ()))
    for name in [n for n in attributes if n not in state and n not in transient]:
        if not _is_engine_owned(attributes[name], task):
            del attributes[name]
    attributes.update(state)
    restore_stats(task, stats)


def restore_stats(task: BoltTask, stats: TaskStats) -> None:
    """Continue the task's cumulative counters from ``stats``."""
    task.stats = stats
    collector = task.collector
    collector.emitted, collector.transferred = stats.emitted, stats.transferred
    collector.batches = stats.batches_out
    collector.restore_stream_counts(stats.streams)
    collector.acked, collector.failed = stats.acked, stats.failed
    collector.process_secs = stats.process_secs
