"""Trident's windows: aggregations over the last tuples or seconds of a stream, exactly once.

Storm's ``Stream.window`` and its ``WindowConfig`` kinds, in Python spelling:
``TumblingCountWindow.of(n)``, ``SlidingCountWindow.of(n, slide)``,
``TumblingDurationWindow.of(duration)`` and ``SlidingDurationWindow.of(duration, slide)``
(a duration is :class:`~sparkstorm.Duration`, or seconds).

A window runs per partition of the stream (group it first for windows by key, or
``global_()`` it for one window), in the batch's commit phase: each partition's tuples
of batch ``txid`` join its windows when the batch commits, strictly in txid order, and
the windows that end then are aggregated and emitted, in that same commit. A tuple's
time is its batch's: the time of the batch's first commit attempt, kept with it.

What each partition holds (its windows' tuples, when they fire, and what batch ``txid``
fired) is kept in a windows store, written once per commit, with the state from before
the batch: a commit replayed (a failure, a restart, a lost worker) starts again from
that state, with the same time, so its windows fire once with the batch's tuples, from
a transactional spout or an opaque one. ``InMemoryWindowsStoreFactory`` keeps it in the
run's memory (through lost workers, not past the run), ``RedisWindowsStoreFactory`` in
Redis.
"""

from __future__ import annotations

import pickle
import uuid
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import override

from sparkstorm.config import TOPOLOGY_NAME
from sparkstorm.control.run_memory import run_memory
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.storm_time import Time
from sparkstorm.topology.windowing import Duration
from sparkstorm.trident.nodes import CommitNode, Node, Row, aggregate, projector
from sparkstorm.trident.operations import Operation
from sparkstorm.trident.state.base import MEMORY, StateStore
from sparkstorm.trident.tuple import tuple_class

KEY = "window"
"""The one key a windows store keeps for each window partition."""


# -- what a window is ----------------------------------------------------------------
@dataclass(frozen=True)
class WindowConfig:
    """A window's length and slide: in tuples (count) or in seconds (duration)."""

    window_length: float
    sliding_length: float
    by_count: bool

    def __post_init__(self) -> None:
        what = "tuples" if self.by_count else "seconds"
        for name, value in (("length", self.window_length), ("slide", self.sliding_length)):
            if not value > 0 or (self.by_count and value != int(value)):
                msg = (
                    f"{type(self).__name__}: a window {name} of {value!r} {what}; give a "
                    f"positive {'int' if self.by_count else 'number'}"
                )
                raise ValueError(msg)
        if self.sliding_length > self.window_length:
            msg = (
                f"{type(self).__name__}: the window slides by {self.sliding_length:g} "
                f"{what}, more than its length {self.window_length:g}: tuples between two "
                f"windows would be in none"
            )
            raise ValueError(msg)

    def get_window_length(self) -> float:
        """The length: tuples, or milliseconds (as Storm's)."""
        return self.window_length if self.by_count else self.window_length * 1000

    def get_sliding_length(self) -> float:
        """The slide: tuples, or milliseconds (as Storm's)."""
        return self.sliding_length if self.by_count else self.sliding_length * 1000


def _secs(duration: Duration | float) -> float:
    return duration.secs if isinstance(duration, Duration) else float(duration)


class TumblingCountWindow(WindowConfig):
    """Every ``n`` tuples, a window of those ``n``.

    .. versionadded:: 0.4.0
    """

    @classmethod
    def of(cls, n: int) -> TumblingCountWindow:
        """A window of ``n`` tuples, then the next ``n``."""
        return cls(n, n, True)


class SlidingCountWindow(WindowConfig):
    """Every ``slide`` tuples, a window of the last ``n``.

    .. versionadded:: 0.4.0
    """

    @classmethod
    def of(cls, n: int, slide: int) -> SlidingCountWindow:
        """The last ``n`` tuples, every ``slide`` tuples."""
        return cls(n, slide, True)


class TumblingDurationWindow(WindowConfig):
    """Every ``duration``, a window of the tuples of that duration.

    .. versionadded:: 0.4.0
    """

    @classmethod
    def of(cls, duration: Duration | float) -> TumblingDurationWindow:
        """Windows of ``duration`` (a :class:`~sparkstorm.Duration`, or seconds), end to end."""
        secs = _secs(duration)
        return cls(secs, secs, False)


class SlidingDurationWindow(WindowConfig):
    """Every ``slide``, a window of the last ``duration``.

    .. versionadded:: 0.4.0
    """

    @classmethod
    def of(cls, duration: Duration | float, slide: Duration | float) -> SlidingDurationWindow:
        """The last ``duration`` of tuples, every ``slide``."""
        return cls(_secs(duration), _secs(slide), False)


# -- where windows are kept ----------------------------------------------------------
class WindowsStore(ABC):
    """Keys and values of the windows of one topology (Storm's ``WindowsStore``).

    .. versionadded:: 0.4.0
    """

    @abstractmethod
    def get(self, key: str) -> Any:
        """The value of ``key``; None if it has none."""

    @abstractmethod
    def put(self, key: str, value: Any) -> None:
        """Set ``key`` to ``value`` (any picklable value)."""

    @abstractmethod
    def remove(self, key: str) -> None:
        """Remove ``key``."""

    def shutdown(self) -> None:  # noqa: B027 (optional)
        """Release what the store holds (a connection)."""


class WindowsStoreFactory(ABC):
    """Makes the store of a window's partitions, in the task that holds them.

    .. versionadded:: 0.4.0
    """

    @abstractmethod
    def create(self, conf: dict[str, Any]) -> WindowsStore:
        """The store, for the task's configuration."""

    def store(self) -> StateStore | None:
        """Where it keeps windows, as :meth:`~sparkstorm.trident.state.StateFactory.store`."""
        return None


class _RunMemoryWindows(WindowsStore):
    def __init__(self, conf: dict[str, Any], space: str) -> None:
        self.memory, self.space = run_memory(conf), space

    @override
    def get(self, key: str) -> Any:
        return self.memory.read(self.space).get(key)

    @override
    def put(self, key: str, value: Any) -> None:
        self.memory.write(self.space, {key: value})

    @override
    def remove(self, key: str) -> None:
        self.memory.write(self.space, {}, [key])


class InMemoryWindowsStoreFactory(WindowsStoreFactory):
    """Windows in the run's memory: through lost workers and rebalances, not past the run.

    .. versionadded:: 0.4.0
    """

    def __init__(self) -> None:
        self.id = uuid.uuid4().hex

    @override
    def create(self, conf: dict[str, Any]) -> WindowsStore:
        return _RunMemoryWindows(conf, f"windows:{self.id}")

    @override
    def store(self) -> StateStore:
        return MEMORY


class _RedisWindows(WindowsStore):
    """Windows in Redis, each value a signed pickle (``state/signing.py``)."""

    def __init__(self, url: str, prefix: str, conf: dict[str, Any]) -> None:
        from sparkstorm.config import provider_config
        from sparkstorm.state.redis_store import redis_client
        from sparkstorm.state.signing import Signer

        self.client, self.prefix = redis_client({"url": url}, 30.0), prefix
        self.signer = Signer.of(provider_config(conf))

    @override
    def get(self, key: str) -> Any:
        raw = self.client.get(f"{self.prefix}:{key}")
        if raw is None:
            return None
        name = f"{self.prefix}:{key}"
        return pickle.loads(self.signer.verify(raw, f"Redis key {name}", (name,), self.prefix))

    @override
    def put(self, key: str, value: Any) -> None:
        name = f"{self.prefix}:{key}"
        self.client.set(name, self.signer.sign(pickle.dumps(value, protocol=5), (name,)))

    @override
    def remove(self, key: str) -> None:
        self.client.delete(f"{self.prefix}:{key}")

    @override
    def shutdown(self) -> None:
        self.client.close()


class RedisWindowsStoreFactory(WindowsStoreFactory):
    """Windows in Redis, under ``sparkstorm:trident:<name>:windows:...`` (signed pickles).

    .. versionadded:: 0.4.0
    """

    def __init__(self, url: str, name: str) -> None:
        self.url, self.name = url, name

    @override
    def create(self, conf: dict[str, Any]) -> WindowsStore:
        return _RedisWindows(self.url, f"sparkstorm:trident:{self.name}:windows", conf)

    @override
    def store(self) -> StateStore:
        return StateStore("redis", {"url": self.url}, self.name)


# -- what a partition's windows hold, and how a batch moves them -----------------------
@dataclass
class Windows:
    """A partition's windows: the tuples they hold, and where the next one ends."""

    tuples: list[tuple[float, list[Any]]] = field(default_factory=list)
    """(time, values) of the tuples still in a window, oldest first."""
    since_fire: int = 0
    """Count windows: tuples since the last window ended."""
    next_end: float | None = None
    """Duration windows: when the next window ends (None before the first commit: then
    one slide after it)."""


def advance(
    config: WindowConfig, windows: Windows, rows: list[list[Any]], now: float
) -> tuple[Windows, list[list[list[Any]]]]:
    """The windows after batch rows ``rows`` came at time ``now``, and those that ended.

    Pure: ``windows`` is not changed, so a replayed commit can start again from it.
    """
    ended: list[list[list[Any]]] = []
    if config.by_count:
        length, slide = int(config.window_length), int(config.sliding_length)
        since = windows.since_fire
        last = deque(windows.tuples, maxlen=length)  # the last ``length`` tuples, at most
        for row in rows:
            last.append((now, row))
            since += 1
            if since == slide:
                ended.append([values for _, values in last])
                since = 0
                if slide == length:  # tumbling: no tuple is in the next window yet
                    last.clear()
        return Windows(list(last), since, None), ended
    tuples = list(windows.tuples)
    next_end = windows.next_end if windows.next_end is not None else now + config.sliding_length
    tuples.extend((now, row) for row in rows)
    while next_end <= now:  # a window is [end - length, end): it ends once its end came
        start = next_end - config.window_length
        window = [values for time, values in tuples if start <= time < next_end]
        if window:  # as Storm's, a window without tuples is not aggregated
            ended.append(window)
        next_end += config.sliding_length
        first = next_end - config.window_length
        tuples = [(time, values) for time, values in tuples if time >= first]
    return Windows(tuples, 0, next_end), ended


# -- the node that runs a window -----------------------------------------------------
class WindowNode(CommitNode):
    """``window(...)``: each partition's windows, moved on in every commit."""

    def __init__(
        self,
        parent: Node,
        config: WindowConfig,
        factory: WindowsStoreFactory,
        in_fields: Fields,
        agg: Operation,
        out: Fields,
    ) -> None:
        super().__init__(out, [parent], operations=(agg,))
        self.commit_phase = True
        self.buffered = not parent.commit_phase
        self.config, self.factory, self.agg = config, factory, agg
        self.project = projector(parent.fields, in_fields)
        self.project_fields = in_fields

    @override
    def open(self, conf: dict[str, Any], context: Any, index: int, num: int) -> None:
        super().open(conf, context, index, num)
        self.store = self.factory.create(conf)
        topology = conf.get(TOPOLOGY_NAME) or "topology"  # the same in a restarted run
        self.key = f"{KEY}:{topology}:{self.label}:{index}"

    @override
    def close(self) -> None:
        super().close()
        self.store.shutdown()

    @override
    def write(self, txid: int, rows: list[Row], task: Any) -> list[Row]:
        """Move the windows on by the batch's rows; what the windows that ended emit."""
        kept = self.store.get(self.key)
        if kept is not None and kept["txid"] == txid:  # a replayed commit: from before it
            before, now = kept["before"], kept["time"]
        elif kept is not None and kept["txid"] > txid:
            msg = (
                f"{self.label}: batch {txid} is behind the window, which batch "
                f"{kept['txid']} already moved: the topology's progress was kept somewhere "
                f"the window was not"
            )
            raise RuntimeError(msg)
        else:
            before = kept["after"] if kept is not None else Windows()
            now = Time.current_time_secs()
        after, ended = advance(self.config, before, [list(self.project(r)) for r in rows], now)
        self.store.put(self.key, {"txid": txid, "time": now, "before": before, "after": after})
        width = len(self.fields)
        cls = tuple_class(self.project_fields)
        return [
            out
            for window in ended
            for out in aggregate(self.agg, txid, [cls(values) for values in window], width, self)
        ]
