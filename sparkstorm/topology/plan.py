"""The task layout of a submitted topology: task ids, the acker's tasks, stream routes.

Task ids follow Storm: components sorted by id (``__acker`` included) get consecutive
ids from 1. A ``Plan`` is built on the driver at submit and shipped to the workers.
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from typing import Any

import cloudpickle

from sparkstorm.config import (
    SPARKSTORM_CAPTURE,
    SPARKSTORM_SUPERSTEP_HOPS,
    TOPOLOGY_ACKER_EXECUTORS,
    TOPOLOGY_MAX_TASK_PARALLELISM,
    TOPOLOGY_TICK_TUPLE_FREQ_SECS,
)
from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.builder import ComponentSpec, Topology
from sparkstorm.topology.components import Spout, is_stateful
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import CUSTOM, LOCAL_OR_SHUFFLE, SYSTEM_STREAM
from sparkstorm.topology.groupings import StreamRoute, custom_chooser
from sparkstorm.topology.hooks import hook_classes
from sparkstorm.topology.streams import ACKER_COMPONENT_ID


class Plan:
    """Task ids, task configuration and stream routes of one submitted topology."""

    def __init__(self, topology: Topology, conf: dict[str, Any]) -> None:
        self.topology = topology
        self.conf = conf
        self.components: dict[str, ComponentSpec] = topology.components
        self.num_ackers: int = conf[TOPOLOGY_ACKER_EXECUTORS]
        self.executors: dict[str, int] = {}
        """Continuous mode: components kept in that many workers (``rebalance -e``)."""
        hook_classes(conf)  # a hook that does not load is an error at submit, not in a task
        cap = conf.get(TOPOLOGY_MAX_TASK_PARALLELISM) or math.inf  # Storm's, for tests
        counts = {cid: int(min(spec.num_tasks, cap)) for cid, spec in topology.components.items()}
        if self.num_ackers:
            counts[ACKER_COMPONENT_ID] = self.num_ackers
        self._tasks: dict[str, list[int]] = {}
        self.task_component: dict[int, str] = {}
        next_id = 1
        for cid in sorted(counts):
            self._tasks[cid] = list(range(next_id, next_id + counts[cid]))
            for task in self._tasks[cid]:
                self.task_component[task] = cid
            next_id += counts[cid]
        self.num_tasks = next_id - 1
        self.acker_tasks: list[int] = self._tasks.get(ACKER_COMPONENT_ID, [])
        self.spout_tasks: list[int] = [
            t for s in topology.spouts for t in self._tasks[s.component_id]
        ]
        self.bolt_tasks: list[int] = [
            t for b in topology.bolts for t in self._tasks[b.component_id]
        ]
        self.stateful_tasks: list[int] = [
            t for b in topology.bolts if is_stateful(b.obj) for t in self._tasks[b.component_id]
        ]
        """Tasks of stateful bolts: their state is checkpointed (see control/checkpoints)."""
        self.deal(1)

    def captured_components(self) -> frozenset[str]:
        """``sparkstorm.capture`` as component ids, each checked to exist."""
        names = self.conf.get(SPARKSTORM_CAPTURE) or ()
        unknown = sorted(set(names) - set(self.components))
        if unknown:
            msg = (
                f"config key {SPARKSTORM_CAPTURE!r} names {unknown}, which the topology does "
                f"not have (components: {sorted(self.components)})"
            )
            raise InvalidTopologyError(msg)
        return frozenset(names)

    def deal(self, workers: int) -> None:
        """Deal the bolt and acker tasks round-robin over ``workers`` (Spark partitions).

        Tasks dealt to one worker run in the same Python worker each superstep: tuples
        between them skip the shuffle, and ``local_or_shuffle_grouping`` prefers them.
        """
        tasks = sorted(self.acker_tasks + self.bolt_tasks)
        self.workers = max(1, min(workers, len(tasks)))
        self.worker_of: dict[int, int] = {t: i % self.workers for i, t in enumerate(tasks)}
        """Bolt or acker task -> the worker (Spark partition) that runs it."""

    def for_executors(self) -> Plan:
        """The plan without the spouts' objects, which only the driver runs.

        A spout may hold a whole data set or a client; shipping it with every superstep's
        plan to every Python worker would cost time and memory for nothing.
        """
        specs = {
            cid: replace(spec, obj=_DriverSpout()) if spec.is_spout else spec
            for cid, spec in self.components.items()
        }
        plan = Plan(Topology(specs), self.conf)
        plan.deal(self.workers)
        return plan

    def for_worker(self, worker: int) -> Plan:
        """The plan as continuous worker ``worker`` needs it.

        Whole objects only for the components it runs tasks of, each other one as an
        empty instance of its class. A worker routes to every component but runs only
        its own: the others' objects (a spout may hold a whole data set) would cross the
        network and be unpickled for nothing. What a worker checks of a component it
        does not run is its kind (``is_columnar``, ``is_stateful``), which an empty
        instance keeps. A class whose empty instance does not pickle (its own
        ``__getstate__`` or ``__reduce__``) is shipped whole.
        """
        runs = {self.task_component[t] for t, w in self.worker_of.items() if w == worker}
        specs = {
            cid: spec if cid in runs else replace(spec, obj=_kind_of(spec.obj))
            for cid, spec in self.components.items()
        }
        plan = copy.copy(self)
        plan.topology = Topology(specs)
        plan.components = specs
        return plan

    def component_tasks(self, component_id: str) -> list[int]:
        """The task ids of ``component_id``, ascending."""
        return self._tasks[component_id]

    def component_conf(self, component_id: str) -> dict[str, Any]:
        """The topology's configuration overlaid with the component's own."""
        if component_id == ACKER_COMPONENT_ID:
            return {**self.conf, TOPOLOGY_TICK_TUPLE_FREQ_SECS: None}
        return {**self.conf, **self.components[component_id].conf}

    def routes(self, component_id: str, task_id: int | None = None) -> dict[str, StreamRoute]:
        """Fresh routes for every stream ``component_id`` declares (one set per task).

        With hops on (``sparkstorm.superstep.hops``), ``local_or_shuffle_grouping``
        from ``task_id`` shuffles over the subscriber's tasks on the same worker, or over
        all of them when none is (as Storm's); otherwise over all of them.
        """
        spec = self.components[component_id]
        routes = {sid: StreamRoute(component_id, sid, info) for sid, info in spec.streams.items()}
        hops = self.conf.get(SPARKSTORM_SUPERSTEP_HOPS)  # else co-located tasks gain nothing
        worker = self.worker_of.get(task_id) if hops and task_id is not None else None
        for bolt in self.topology.bolts:
            for source, grouping in bolt.inputs:
                if source.component_id == component_id:
                    tasks = self._tasks[bolt.component_id]
                    if grouping.kind == LOCAL_OR_SHUFFLE and worker is not None:
                        tasks = [t for t in tasks if self.worker_of[t] == worker] or tasks
                    chooser = None
                    if grouping.kind == CUSTOM:  # the task's own copy, prepared, as Storm's
                        context = TopologyContext(self, task_id or 0, self.conf)
                        own = copy.deepcopy(grouping.custom)
                        chooser = custom_chooser(own, tasks, source, task_id, context)
                    if source.stream_id not in routes:  # the __system stream, undeclared
                        routes[source.stream_id] = StreamRoute(
                            component_id, source.stream_id, SYSTEM_STREAM
                        )
                    routes[source.stream_id].add_subscriber(
                        grouping.kind, tasks, grouping.fields, chooser
                    )
        return routes


class _DriverSpout(Spout):
    """Stands in for a spout in the executors' plan; spouts never run there."""

    def next_tuple(self) -> None:
        """Never called: spouts run on the driver."""
        msg = "a spout ran outside the driver"
        raise RuntimeError(msg)


def _kind_of(obj: Any) -> Any:
    """An empty instance of ``obj``'s class (``__init__`` not called).

    ``obj`` itself if such an instance cannot be made or pickled as an empty one.
    """
    cls: Any = type(obj)
    try:
        empty = cls.__new__(cls)
        cloudpickle.dumps(empty)  # its class and no state: small, and a check it travels
    except Exception:  # any failure: the whole object travels, as before
        return obj
    return empty
