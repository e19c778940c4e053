"""The engine-agnostic task runner: run a bolt task over its tuples, collect what it emits.

Both engines call :meth:`BoltTask.run` once per task and superstep (Spark once per hop
within its partition), in the process that holds the task (the driver's for ``local``, a
Spark executor's for ``spark``).
"""

from __future__ import annotations

import logging
import pickle
import time
from collections.abc import Callable
from typing import Any

from sparkstorm._types import FailReason
from sparkstorm.config import TOPOLOGY_DEBUG
from sparkstorm.errors import ComponentStateError, FailedException, ReportedFailedException
from sparkstorm.reliability.acker import Acker
from sparkstorm.reliability.batch_collectors import BatchOutputCollector
from sparkstorm.reliability.collectors import BasicOutputCollector, OutputCollector
from sparkstorm.reliability.debug import note_bolt_calls
from sparkstorm.reliability.ids import id_source
from sparkstorm.tasks.arrow_windowed import ArrowWindowExecutor, PersistentArrowWindowExecutor
from sparkstorm.tasks.columns import as_batches, as_tuples, fed_batches
from sparkstorm.tasks.hooks import Hooks, add_auto_hooks, hook_bolt_outcomes, hook_emits
from sparkstorm.tasks.input_stats import (
    EXECUTE_SECS,
    EXECUTED,
    copy_totals,
    count_outcomes,
    entry,
    sole_input,
)
from sparkstorm.tasks.metrics import TaskStats
from sparkstorm.tasks.pickling import dumps
from sparkstorm.tasks.registered_metrics import RegisteredMetrics
from sparkstorm.tasks.stateful import (
    StatefulBatchOutputCollector,
    StatefulBoltExecutor,
    StatefulOutputCollector,
)
from sparkstorm.tasks.windowed import PersistentWindowExecutor, WindowedBoltExecutor
from sparkstorm.topology.columnar import ArrowBolt, WindowedArrowBolt, takes_batches
from sparkstorm.topology.components import BasicBolt, Bolt, Component, is_stateful
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.hooks import BoltExecuteInfo
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.row_batch import RowBatch
from sparkstorm.topology.streams import ACKER_COMPONENT_ID
from sparkstorm.topology.tuple import Row, Tuple
from sparkstorm.topology.windowing import is_windowed

log = logging.getLogger(__name__)


def copy_component(obj: Component, component_id: str) -> Any:
    """A private copy of a component for one task, made the way Storm does: by pickling.

    cloudpickle is used so that classes defined in ``__main__`` or inside a function
    (usual in scripts and tests) can be copied and shipped to Spark executors.

    Raises
    ------
    ComponentStateError
        If the component cannot be pickled; the message says to open clients in
        ``open``/``prepare`` instead of ``__init__``.
    """
    try:
        return pickle.loads(dumps(obj))
    except Exception as exc:
        msg = (
            f"component {component_id!r} ({type(obj).__name__}) cannot be copied to its "
            f"tasks: {exc}. Components are pickled once per task, as in Storm; create "
            f"connections and clients in open()/prepare(), not in __init__"
        )
        raise ComponentStateError(msg) from exc


class BasicBoltExecutor(Bolt):
    """Runs a :class:`BasicBolt` as a bolt: anchor to the input, ack it after execute."""

    def __init__(self, delegate: BasicBolt) -> None:
        self.delegate = delegate

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Prepare the delegate and wrap the collector."""
        self.collector = collector
        self.basic = BasicOutputCollector(collector)
        self._ack = collector.ack
        self.delegate.prepare(conf, context)

    def execute(self, tup: Tuple) -> None:
        """Execute the delegate; ack on return, fail on :class:`FailedException`."""
        self.basic._input = tup
        try:
            self.delegate.execute(tup, self.basic)
        except FailedException as exc:
            if isinstance(exc, ReportedFailedException):
                self.collector.report_error(exc)
            self.collector.fail(tup)
        else:
            self._ack(tup)

    def cleanup(self) -> None:
        """Clean up the delegate."""
        self.delegate.cleanup()


class BoltTask:
    """One bolt (or acker) task: its component instance, collector and statistics."""

    def __init__(self, plan: Plan, task_id: int, seed: int, *, take: bool = False) -> None:
        """A task of ``plan``'s bolt (or acker) ``task_id``.

        ``take``: use the plan's own bolt object rather than a copy, where the plan is
        the process's own copy and no other task copies from it later.
        """
        component_id = plan.task_component[task_id]
        self.plan, self.task_id, self.seed = plan, task_id, seed
        self.component_id = component_id
        self.conf = plan.component_conf(component_id)
        self.stats = TaskStats(component_id, task_id)
        stateful = task_id in plan.stateful_tasks
        debug = self.conf[TOPOLOGY_DEBUG] and component_id != ACKER_COMPONENT_ID
        spec = plan.components.get(component_id)
        self.columnar = spec is not None and takes_batches(spec.obj)
        """An Arrow bolt: it executes record batches."""
        self.fed_batches = not self.columnar and fed_batches(plan, component_id)
        """A tuple bolt with an Arrow stream upstream: its rows come as tuples."""
        collector_class = (
            (StatefulBatchOutputCollector if self.columnar else StatefulOutputCollector)
            if stateful
            else BatchOutputCollector
            if self.columnar
            else OutputCollector
        )
        self.collector = collector_class(plan, task_id)
        if debug:
            note_bolt_calls(self.collector)
        self.context = TopologyContext(plan, task_id, self.conf)
        self.broken: str | None = None
        self.current: Tuple | None = None
        """The tuple ``execute`` runs on now, for the watchdog (None between supersteps)."""
        self.calling: str | None = None
        """``prepare`` or ``cleanup`` while the bolt's one runs, for the watchdog."""
        self.report_stats: Callable[[TaskStats], None] | None = None
        """The executor's own counters into the task's statistics (stateful, windowed, acker)."""
        self.sole_input: tuple[str, str] | None = None
        """The one input every tuple comes from; None: inputs are counted per tuple."""
        self.hooks: Hooks | None = None
        """The task's hooks, once ``prepare`` found some (see ``tasks/hooks``)."""
        self.registered: RegisteredMetrics | None = None
        """The metrics ``prepare`` registered (see ``tasks/registered_metrics``)."""
        if component_id == ACKER_COMPONENT_ID:
            acker = Acker(stateful=bool(plan.stateful_tasks))
            self.bolt: Bolt = acker
            self.report_stats = acker.report_stats
            return
        obj: Any = plan.components[component_id].obj
        obj = obj if take else copy_component(obj, component_id)
        self.bolt = BasicBoltExecutor(obj) if isinstance(obj, BasicBolt) else obj
        executor: StatefulBoltExecutor | WindowedBoltExecutor | None = None
        if is_stateful(obj) and is_windowed(obj):
            windows = (
                PersistentArrowWindowExecutor(obj)
                if isinstance(obj, WindowedArrowBolt)
                else PersistentWindowExecutor(obj)
            )
            executor = StatefulBoltExecutor(windows, obj)
        elif is_stateful(obj):
            executor = StatefulBoltExecutor(self.bolt, obj)
        elif isinstance(obj, WindowedArrowBolt):
            executor = ArrowWindowExecutor(obj)
        elif is_windowed(obj):
            executor = WindowedBoltExecutor(obj)
        if executor is not None:
            self.bolt, self.report_stats = executor, executor.report_stats
        self.sole_input = sole_input(plan, component_id)
        if self.sole_input is None:
            count_outcomes(self.collector, lambda: self.stats)

    def call_under_way(self) -> tuple[str, Any] | None:
        """The bolt's call running now and a progress marker (the watchdog's probe).

        ``execute`` progresses with each tuple; ``prepare`` and ``cleanup`` are one call.
        None between calls.
        """
        if self.current is not None:
            return f"execute() of bolt {self.component_id!r} task {self.task_id}", id(self.current)
        if self.calling is not None:
            return f"{self.calling}() of bolt {self.component_id!r} task {self.task_id}", 0
        return None

    def prepare(self) -> None:
        """Call the bolt's ``prepare``; an error there is reported and breaks the task."""
        self.stats.prepares += 1
        self.calling = "prepare"
        hooking = self.component_id != ACKER_COMPONENT_ID
        try:
            if hooking:
                self.context.hooks.clear()  # a second prepare (another worker) adds anew
                self.context.metrics.clear()
                add_auto_hooks(self.context)
            self.bolt.prepare(self.conf, self.context, self.collector)
        except Exception as exc:
            self.collector.report_error(exc)
            self.broken = f"prepare() failed: {type(exc).__name__}: {exc}"
        finally:
            self.calling = None
        if self.context.metrics:
            self.registered = RegisteredMetrics(self.context.metrics)
        if hooking and self.context.hooks and self.hooks is None:
            self.hooks = Hooks(self.context.hooks, self.collector.report_error)
            hook_emits(self.collector, self.hooks, self.task_id)
            hook_bolt_outcomes(self.collector, self.hooks, self.task_id)

    def run(
        self,
        tuples: list[Tuple],
        superstep: int,
        now: float,
        out: list[Row],
        captured: list[tuple[str, str, list[Any]]] | None = None,
        hop: int = 0,
        ids: Callable[[], int] | None = None,
    ) -> None:
        """Execute ``tuples`` in order, appending every emitted row to ``out``.

        ``hop`` counts the task's earlier runs in this superstep (see ``id_source``);
        ``ids``, when given, is an id source kept for the run (a continuous worker's).

        An exception from ``execute`` is reported with component and task, and the input's
        trees fail with reason ``error``; the next tuple is executed as usual.
        """
        collector = self.collector
        if self.fed_batches:
            tuples = as_tuples(tuples)
        if ids is None:
            ids = id_source(self.seed, superstep, self.task_id, hop)
        collector.begin(out, ids, now, superstep, hop)
        collector.capture(captured)
        execute = self.bolt.execute
        started = time.perf_counter()
        executed = len(tuples)
        if self.broken is not None:
            reason = FailReason("error", self.component_id, self.task_id, self.broken)
            for tup in tuples:
                collector.fail_with(tup, reason)
        elif isinstance(self.bolt, Acker):
            # the acker applies a superstep's messages at once; it counts the roots they name
            executed = self.bolt.execute_batch(tuples)
        elif self.columnar:
            executed = self._run_batches(tuples)
        elif self.sole_input is None or self.hooks is not None:
            self._run_counting(tuples)
        else:
            wall = time.time
            for tup in tuples:
                self.current = tup
                tup.received_at = wall()  # for process latency (Storm: receipt to ack)
                try:
                    execute(tup)
                except Exception as exc:
                    self._raised(tup, exc)
        self.current = None
        collector.flush_acks()
        stats = self.stats
        stats.execute_secs += time.perf_counter() - started
        stats.executed += executed
        stats.emitted, stats.transferred = collector.emitted, collector.transferred
        stats.batches_out = collector.batches
        stats.acked, stats.failed = collector.acked, collector.failed
        stats.process_secs = collector.process_secs
        stats.streams = collector.stream_counts()
        if self.registered is not None:
            self.registered.collect(now, stats, collector.report_error)
        if self.sole_input is not None:
            copy_totals(stats, self.sole_input)
        if self.report_stats is not None:
            self.report_stats(stats)

    def _run_batches(self, tuples: list[Tuple]) -> int:
        """An Arrow bolt's turn: each record batch to ``execute_batch``; rows executed."""
        bolt, collector = self.bolt, self.collector
        assert isinstance(bolt, ArrowBolt | StatefulBoltExecutor | ArrowWindowExecutor)
        assert isinstance(collector, BatchOutputCollector)
        rows, wall = 0, time.time
        for item in as_batches(tuples):
            self.current = item
            item.received_at = wall()
            if type(item) is not RowBatch:  # a tick
                try:
                    bolt.execute(item)
                except Exception as exc:
                    self._raised(item, exc)
                rows += 1
                continue
            rows += item.num_rows
            self.stats.batches_in += 1
            collector.current = item
            try:
                bolt.execute_batch(item.batch)
            except Exception as exc:
                collector.report_error(exc)
                text = f"{type(exc).__name__}: {exc}"
                why = FailReason("error", self.component_id, self.task_id, text)
                collector.fail_unsettled(item, why)
            finally:
                collector.current = None
            if item.unsettled().any():  # held: the bolt settles it later, or it times out
                collector.held[id(item.batch)] = item
        return rows

    def _run_counting(self, tuples: list[Tuple]) -> None:
        """:meth:`run`'s loop for a bolt with several inputs or hooks: each tuple timed."""
        execute, inputs, hooks = self.bolt.execute, self.stats.inputs, self.hooks
        wall = time.time
        for tup in tuples:
            self.current = tup
            figures = inputs.get((tup.source_component, tup.source_stream))
            if figures is None:
                figures = entry(self.stats, tup)
            figures[EXECUTED] += 1
            tup.received_at = started = wall()
            try:
                execute(tup)
            except Exception as exc:
                self._raised(tup, exc)
            took = wall() - started
            figures[EXECUTE_SECS] += took
            if hooks is not None:
                hooks("bolt_execute", BoltExecuteInfo(tup, self.task_id, took * 1000))

    def _raised(self, tup: Tuple, exc: Exception) -> None:
        """``execute`` raised on ``tup``: report it and fail the input's trees (``error``)."""
        self.collector.report_error(exc)
        text = f"{type(exc).__name__}: {exc}"
        self.collector.fail_with(tup, FailReason("error", self.component_id, self.task_id, text))

    def cleanup(self) -> None:
        """Call the bolt's ``cleanup``; errors are reported, not raised."""
        self.calling = "cleanup"
        try:
            self.bolt.cleanup()
        except Exception as exc:
            self.collector.report_error(exc)
        finally:
            self.calling = None
        if self.hooks is not None:
            self.hooks.cleanup()
        if self.registered is not None:  # the bucket under way is sent too
            self.registered.collect(
                self.collector.now, self.stats, self.collector.report_error, last=True
            )
