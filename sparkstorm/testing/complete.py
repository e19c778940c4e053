"""A topology run over fixed input to its end: Storm's ``completeTopology``, tracked waits.

``complete_topology`` swaps every spout for a :class:`FixedTupleSpout` of the tuples
:class:`MockedSources` gives it (a spout that says when its input ends, a
``CompletableSpout``, may keep its own), runs the topology until the spouts are
exhausted and nothing is left (every tree acked or failed), and returns what every
component emitted, per stream. It runs on any engine and mode, like ``sparkstorm.run``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from sparkstorm._types import MsgId
from sparkstorm.config import SPARKSTORM_CAPTURE, SPARKSTORM_SPARK_MODE
from sparkstorm.control.run import RunResult, run
from sparkstorm.errors import IdleTimeoutError, InvalidTopologyError
from sparkstorm.reliability.spout_collector import SpoutOutputCollector
from sparkstorm.testing.cluster import LocalCluster
from sparkstorm.topology.builder import Topology
from sparkstorm.topology.components import CompletableSpout, Spout
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import DEFAULT_STREAM_ID, OutputFieldsDeclarer, StreamInfo
from sparkstorm.topology.fields import Fields

FixedTuple = tuple[str, list[Any]]
"""A tuple of fixed input: (stream, values)."""


class FixedTupleSpout(Spout, CompletableSpout):
    """Emits a fixed list of tuples once each, tracked, then nothing: Storm's ``FixedTupleSpout``.

    ``tuples`` are value lists (on the default stream) or ``(stream, values)`` pairs. With
    several tasks, task ``i`` of ``n`` emits tuples ``i, i+n, ...``, as Storm's does. A
    failed tuple is not replayed. ``fields`` declares the default stream (default
    ``field1, field2, ...`` as wide as the first tuple).

    .. versionadded:: 0.2.0
    """

    def __init__(
        self,
        tuples: list[Any],
        fields: Fields | None = None,
        *,
        streams: dict[str, StreamInfo] | None = None,
    ) -> None:
        self.tuples: list[FixedTuple] = [
            (t[0], list(t[1])) if _is_fixed(t) else (DEFAULT_STREAM_ID, list(t)) for t in tuples
        ]
        width = len(self.tuples[0][1]) if self.tuples else 1
        self._fields = fields or Fields(*(f"field{i + 1}" for i in range(width)))
        self._streams = streams

    def open(
        self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector
    ) -> None:
        """Take this task's share of the tuples."""
        tasks = len(context.get_component_tasks(context.get_this_component_id()))
        self._collector = collector
        self._serving = list(enumerate(self.tuples))[context.get_this_task_index() :: tasks]

    def next_tuple(self) -> None:
        """Emit the next tuple, with its index as msg id."""
        if self._serving:
            index, (stream, values) = self._serving.pop(0)
            self._collector.emit(values, index, stream)

    def is_exhausted(self) -> bool:
        """Whether every tuple of this task's share is out (failed ones are not replayed)."""
        return not self._serving

    def ack(self, msg_id: MsgId) -> None:
        """Nothing to do: the tuple is done."""

    def fail(self, msg_id: MsgId, reason: Any = None) -> None:
        """Nothing to do: fixed tuples are not replayed (as Storm's)."""

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """The mocked spout's streams, or ``fields`` on the default stream."""
        if self._streams is None:
            declarer.declare(self._fields)
            return
        for stream, info in self._streams.items():
            declarer.declare_stream(stream, info.fields, direct=info.direct)


def _is_fixed(item: Any) -> bool:
    return (
        isinstance(item, tuple)
        and len(item) == 2
        and isinstance(item[0], str)
        and isinstance(item[1], list | tuple)
    )


@dataclass
class MockedSources:
    """Fixed input per spout, for :func:`complete_topology`: Storm's ``MockedSources``.

    .. versionadded:: 0.2.0
    """

    data: dict[str, list[FixedTuple]] = field(default_factory=dict)

    def add_mock_data(
        self, spout_id: str, *tuples: list[Any], stream: str = DEFAULT_STREAM_ID
    ) -> MockedSources:
        """Give spout ``spout_id`` these tuples (value lists) on ``stream``; chains."""
        self.data.setdefault(spout_id, []).extend((stream, list(t)) for t in tuples)
        return self


@dataclass
class CompletedTopology:
    """What every component emitted in a :func:`complete_topology` run, and the run.

    .. versionadded:: 0.2.0
    """

    tuples: dict[str, dict[str, list[list[Any]]]]
    """component -> stream -> the values it emitted there, in order per task."""
    result: RunResult

    def read_tuples(self, component: str, stream: str = DEFAULT_STREAM_ID) -> list[list[Any]]:
        """The values ``component`` emitted on ``stream``: Storm's ``Testing.readTuples``."""
        if component not in self.tuples and component not in self.result.stats:
            msg = f"no component {component!r} (components: {sorted(self.result.stats)})"
            raise KeyError(msg)
        return list(self.tuples.get(component, {}).get(stream, []))


def complete_topology(
    topology: Topology,
    mocked_sources: MockedSources | None = None,
    conf: dict[str, Any] | None = None,
    *,
    engine: str = "local",
    spark: Any = None,
    mode: str | None = None,
    timeout_secs: float = 120.0,
) -> CompletedTopology:
    """Run ``topology`` over fixed input until it is done; what every component emitted.

    Every spout must be mocked in ``mocked_sources`` or be a
    :class:`~sparkstorm.CompletableSpout` (a :class:`FixedTupleSpout` is one): the run
    ends once they are exhausted and their tuples all processed (acked or failed), so
    input that never ends cannot be completed. Storm's ``Testing.completeTopology``.

    Raises
    ------
    InvalidTopologyError
        Naming a spout neither mocked nor fixed, or a mocked id that is not a spout.

    .. versionadded:: 0.2.0
    """
    mocked = (mocked_sources or MockedSources()).data
    specs = dict(topology.components)
    for spout_id in mocked:
        if spout_id not in specs or not specs[spout_id].is_spout:
            spouts = sorted(c.component_id for c in topology.spouts)
            msg = f"mocked source {spout_id!r} is not a spout of the topology (spouts: {spouts})"
            raise InvalidTopologyError(msg, component=spout_id)
    for spec in topology.spouts:
        if spec.component_id in mocked:
            fixed = FixedTupleSpout(mocked[spec.component_id], streams=spec.streams)
            specs[spec.component_id] = replace(spec, obj=fixed)
        elif not isinstance(spec.obj, CompletableSpout):
            msg = (
                f"spout {spec.component_id!r} ({type(spec.obj).__name__}) is neither mocked "
                f"nor a CompletableSpout: complete_topology needs input that ends; give it "
                f"MockedSources().add_mock_data({spec.component_id!r}, [...]), or make it "
                f"a CompletableSpout that says when it is exhausted"
            )
            raise InvalidTopologyError(msg, component=spec.component_id)
    settings = dict(conf or {})
    settings[SPARKSTORM_CAPTURE] = sorted(specs)
    if mode is not None:
        settings[SPARKSTORM_SPARK_MODE] = mode
    result = run(
        Topology(specs),
        settings,
        engine,
        spark,
        until_idle=True,
        duration=timeout_secs,
        spark_ui=False,
    )
    tuples: dict[str, dict[str, list[list[Any]]]] = {}
    for (component, stream), values in result.captured.items():
        tuples.setdefault(component, {})[stream] = values
    return CompletedTopology(tuples, result)


class TrackedTopology:
    """A topology on a :class:`LocalCluster` whose spouts' tuples can be waited for.

    Storm's tracked topology: :meth:`tracked_wait` returns once the spouts emitted ``n``
    more tuples than at the last wait and everything they caused is processed.

    .. versionadded:: 0.2.0
    """

    def __init__(
        self,
        cluster: LocalCluster,
        name: str,
        topology: Topology,
        conf: dict[str, Any] | None = None,
    ) -> None:
        self.cluster, self.name = cluster, name
        self.spouts = [c.component_id for c in topology.spouts]
        cluster.submit_topology(name, conf, topology, capture=True)
        self._seen = 0

    def emitted(self) -> int:
        """Tuples the spouts emitted so far."""
        stats = self.cluster.stats(self.name)
        return sum(stats[s]["emitted"] for s in self.spouts if s in stats)

    def tracked_wait(self, n: int = 1, timeout_secs: float = 60.0) -> None:
        """Wait until the spouts emitted ``n`` more tuples and all of it is processed.

        Raises
        ------
        IdleTimeoutError
            If that has not happened in ``timeout_secs``, saying how many came.
        """
        target, deadline = self._seen + n, time.monotonic() + timeout_secs
        while True:
            self.cluster.wait_until_idle(timeout_secs)
            emitted = self.emitted()
            if emitted >= target:
                self._seen = emitted
                return
            if time.monotonic() > deadline:
                msg = (
                    f"topology {self.name!r}: the spouts emitted {emitted - self._seen} of "
                    f"the {n} tuple(s) waited for in {timeout_secs:g} s"
                )
                raise IdleTimeoutError(msg)
            time.sleep(0.01)

    def captured(self, component: str, stream: str = DEFAULT_STREAM_ID) -> list[list[Any]]:
        """What ``component`` emitted on ``stream`` so far."""
        return self.cluster.captured(self.name, component, stream)
