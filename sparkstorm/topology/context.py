"""``TopologyContext``: what a task knows about itself and the topology (Storm's class)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, TypeVar

from sparkstorm.topology.shared_resources import shared_resource

T = TypeVar("T")
M = TypeVar("M")

if TYPE_CHECKING:
    from sparkstorm.topology.fields import Fields
    from sparkstorm.topology.plan import Plan


class TopologyContext:
    """Handed to ``open`` / ``prepare``: the task's id and component, and the topology's layout.

    Read-only; created by the engine in the process that runs the task.

    .. versionadded:: 0.1.0
    """

    def __init__(self, topology: Plan, task_id: int, conf: dict[str, Any]) -> None:
        self._topology = topology
        self._task_id = task_id
        self._conf = conf
        self.hooks: list[Any] = []
        """The task hooks added (see :meth:`add_task_hook`)."""
        self.metrics: list[tuple[str, Any, float]] = []
        """(name, metric, bucket seconds) registered (see :meth:`register_metric`)."""

    def get_this_task_id(self) -> int:
        """Return this task's id (unique in the topology)."""
        return self._task_id

    def get_this_component_id(self) -> str:
        """The component this task belongs to."""
        return self._topology.task_component[self._task_id]

    def get_component_tasks(self, component_id: str) -> list[int]:
        """The task ids of ``component_id``, ascending."""
        return list(self._topology.component_tasks(component_id))

    def get_this_task_index(self) -> int:
        """Index of this task among its component's tasks (0-based)."""
        tasks = self._topology.component_tasks(self.get_this_component_id())
        return tasks.index(self._task_id)

    def get_component_ids(self) -> list[str]:
        """Every user component id (spouts, then bolts), in declaration order."""
        return list(self._topology.components)

    def get_component_output_fields(self, component_id: str, stream_id: str) -> Fields:
        """The fields that ``component_id`` declared for ``stream_id``."""
        return self._topology.components[component_id].streams[stream_id].fields

    def get_topology_conf(self) -> dict[str, Any]:
        """The topology's configuration, without this component's own overrides.

        .. versionadded:: 0.3.0
        """
        return dict(self._topology.conf)

    def get_this_output_fields(self, stream_id: str = "default") -> Fields:
        """The fields this component declared for ``stream_id``."""
        return self.get_component_output_fields(self.get_this_component_id(), stream_id)

    def shared_resource(self, key: Hashable, factory: Callable[[], T]) -> T:
        """One object per worker process under ``key``, shared by every task there.

        Call it from ``prepare``: the first task in the process creates the object with
        ``factory``; every other task (and every later ``prepare``) gets the same one.
        A connection pool or a loaded model then costs once per process, not per task.
        The process is the driver for the ``local`` engine and each Spark Python worker
        for ``spark``. Objects with ``close()`` are closed when the process exits.

        Notes
        -----
        Storm's worker-level resources (``WorkerTopologyContext.getResource``). Tasks of
        one process run one at a time, so the object needs no locking against them.

        .. versionadded:: 0.1.0
        """
        return shared_resource(key, factory)

    def add_task_hook(self, hook: Any) -> None:
        """Add a task hook to this task (Storm's ``addTaskHook``): it is prepared now.

        See :class:`sparkstorm.topology.hooks.BaseTaskHook`; call it from ``prepare`` or
        ``open``.

        .. versionadded:: 0.2.0
        """
        hook.prepare(self._conf, self)
        self.hooks.append(hook)

    def register_metric(self, name: str, metric: M, time_bucket_secs: float) -> M:
        """Send ``metric``'s value every ``time_bucket_secs`` to the metrics consumers.

        Storm's ``registerMetric``: call it from ``prepare``/``open``; every bucket the
        task takes ``metric.get_value_and_reset()`` (see :mod:`sparkstorm.topology.metrics`).
        Returns ``metric``.

        .. versionadded:: 0.2.0
        """
        if not isinstance(name, str) or not name or name.startswith("__"):
            msg = f"register_metric: name {name!r} must be a string not starting with '__'"
            raise ValueError(msg)
        if not callable(getattr(metric, "get_value_and_reset", None)):
            msg = f"register_metric({name!r}): {type(metric).__name__} has no get_value_and_reset()"
            raise TypeError(msg)
        if not isinstance(time_bucket_secs, int | float) or time_bucket_secs <= 0:
            msg = (
                f"register_metric({name!r}): time_bucket_secs must be > 0, got {time_bucket_secs!r}"
            )
            raise ValueError(msg)
        self.metrics.append((name, metric, float(time_bucket_secs)))
        return metric

    @property
    def conf(self) -> dict[str, Any]:
        """The task's resolved configuration (topology, then component overrides)."""
        return self._conf

    this_task_id = property(get_this_task_id)
    this_component_id = property(get_this_component_id)
