"""Storm's metrics API: metrics a task registers, and consumers that receive their values.

A task registers a metric in ``prepare``/``open`` with
``context.register_metric(name, metric, time_bucket_secs)``; every ``time_bucket_secs``
of topology time the task takes ``metric.get_value_and_reset()`` and sends it, with the
task's :class:`TaskInfo`, to every consumer registered in
``topology.metrics.consumer.register`` (``Config.register_metrics_consumer``). Beside
yours, every task sends Storm's built-in metrics every
``topology.builtin.metrics.bucket.size.secs`` (``__emit-count``, ``__ack-count``, ...).
Consumers run on the driver.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger("sparkstorm.metrics")


class Metric(Protocol):
    """What ``register_metric`` takes: Storm's ``IMetric``."""

    def get_value_and_reset(self) -> Any:
        """The value since the last call (None: nothing to send this bucket)."""


class CountMetric:
    """A count: Storm's ``CountMetric``.

    .. versionadded:: 0.2.0
    """

    def __init__(self) -> None:
        self.value = 0

    def incr(self, by: int = 1) -> None:
        """Add ``by`` (Storm's ``incr`` and ``incrBy``)."""
        self.value += by

    def get_value_and_reset(self) -> int:
        """The count since the last call."""
        value, self.value = self.value, 0
        return value


class MultiCountMetric:
    """Counts by key: Storm's ``MultiCountMetric``.

    .. versionadded:: 0.2.0
    """

    def __init__(self) -> None:
        self.counts: dict[Any, CountMetric] = {}

    def scope(self, key: Any) -> CountMetric:
        """The count of ``key``."""
        metric = self.counts.get(key)
        if metric is None:
            metric = self.counts[key] = CountMetric()
        return metric

    def get_value_and_reset(self) -> dict[Any, int]:
        """Each key's count since the last call."""
        return {key: metric.get_value_and_reset() for key, metric in self.counts.items()}


class MeanReducer:
    """Reduces values to their mean: Storm's ``MeanReducer``.

    .. versionadded:: 0.2.0
    """

    def init(self) -> tuple[float, int]:
        """Sum and count, before any value."""
        return 0.0, 0

    def reduce(self, acc: tuple[float, int], value: float) -> tuple[float, int]:
        """Add ``value``."""
        return acc[0] + value, acc[1] + 1

    def extract(self, acc: tuple[float, int]) -> float | None:
        """The mean, or None if no value came."""
        return acc[0] / acc[1] if acc[1] else None


class ReducedMetric:
    """Values reduced by a reducer (``init``, ``reduce``, ``extract``): Storm's ``ReducedMetric``.

    .. versionadded:: 0.2.0
    """

    def __init__(self, reducer: Any) -> None:
        self.reducer = reducer
        self.acc = reducer.init()

    def update(self, value: Any) -> None:
        """Reduce ``value`` in."""
        self.acc = self.reducer.reduce(self.acc, value)

    def get_value_and_reset(self) -> Any:
        """The reduced value since the last call."""
        value, self.acc = self.reducer.extract(self.acc), self.reducer.init()
        return value


class CombinedMetric:
    """Values combined by a combiner (``identity``, ``combine``): Storm's ``CombinedMetric``.

    .. versionadded:: 0.2.0
    """

    def __init__(self, combiner: Any) -> None:
        self.combiner = combiner
        self.value = combiner.identity()

    def update(self, value: Any) -> None:
        """Combine ``value`` in."""
        self.value = self.combiner.combine(self.value, value)

    def get_value_and_reset(self) -> Any:
        """The combined value since the last call."""
        value, self.value = self.value, self.combiner.identity()
        return value


class AssignableMetric:
    """A value set by the task, sent as it is: Storm's ``AssignableMetric``.

    .. versionadded:: 0.2.0
    """

    def __init__(self, value: Any = None) -> None:
        self.value = value

    def set_value(self, value: Any) -> None:
        """Set the value."""
        self.value = value

    def get_value_and_reset(self) -> Any:
        """The value (it is not reset)."""
        return self.value


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """Which task sent data points, and for which bucket: Storm's ``TaskInfo``."""

    src_worker_host: str
    src_worker_port: int
    src_component_id: str
    src_task_id: int
    timestamp: float
    """When the bucket ended (seconds since the epoch)."""
    update_interval_secs: float


@dataclass(frozen=True, slots=True)
class DataPoint:
    """One metric's value for one bucket: Storm's ``DataPoint``."""

    name: str
    value: Any


class MetricsConsumer(Protocol):
    """What ``topology.metrics.consumer.register`` names: Storm's ``IMetricsConsumer``."""

    def prepare(
        self,
        conf: dict[str, Any],
        argument: Any,
        context: Any,
        error_reporter: Callable[[BaseException], None],
    ) -> None:
        """Once, on the driver, before any data point."""

    def handle_data_points(self, task_info: TaskInfo, data_points: list[DataPoint]) -> None:
        """One task's data points for one bucket."""

    def cleanup(self) -> None:
        """When the topology stops."""


class LoggingMetricsConsumer:
    """Logs each data point (``sparkstorm.metrics`` logger): Storm's ``LoggingMetricsConsumer``.

    .. versionadded:: 0.2.0
    """

    def prepare(
        self,
        conf: dict[str, Any],
        argument: Any,
        context: Any,
        error_reporter: Callable[[BaseException], None],
    ) -> None:
        """Nothing to set up."""

    def handle_data_points(self, task_info: TaskInfo, data_points: list[DataPoint]) -> None:
        """A line per data point: time, task, name, value."""
        for point in data_points:
            log.info(
                "%.0f %s:%d %s %r",
                task_info.timestamp,
                task_info.src_component_id,
                task_info.src_task_id,
                point.name,
                point.value,
            )

    def cleanup(self) -> None:
        """Nothing to release."""


class SinceStart(dict[str, Any]):
    """A metric's value whose figures go on across its task's restarts.

    A task started again (a lost worker, a rebalance) starts its metric again: its
    counts from 0, its newest txid from where its progress says. Such a value names its
    ``COUNTS``, summed over the task's lives, and its ``HIGHEST``, the highest any life
    said; the rest are the newest life's. So a figure an operator reads never goes back.
    """

    COUNTS: tuple[str, ...] = ()
    HIGHEST: tuple[str, ...] = ()

    def after(self, earlier: list[SinceStart]) -> dict[str, Any]:
        """The newest value, with the ``earlier`` lives' figures carried in."""
        carried = dict(self)
        for key in self.COUNTS:
            carried[key] = self.get(key, 0) + sum(e.get(key, 0) for e in earlier)
        for key in self.HIGHEST:
            carried[key] = max([self.get(key, 0), *(e.get(key, 0) for e in earlier)])
        return carried
