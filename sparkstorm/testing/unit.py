"""One bolt's ``execute`` under test, without any cluster.

A test tuple goes in; a collector records what the bolt did with it::

    bolt, collector = prepared(SplitSentence())
    bolt.execute(test_tuple(["the cow"], fields=["sentence"]))
    assert collector.emitted == [("default", ["the"]), ("default", ["cow"])]
    assert collector.acked == 1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkstorm._types import FailReason
from sparkstorm.config import resolve
from sparkstorm.topology.builder import TopologyBuilder
from sparkstorm.topology.components import BasicBolt, Bolt
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import DEFAULT_STREAM_ID
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.tuple import Tuple


def test_tuple(
    values: Sequence[Any],
    component: str = "component",
    stream: str = DEFAULT_STREAM_ID,
    fields: Sequence[str] | Fields | None = None,
    task: int = 1,
) -> Tuple:
    """A tuple as a bolt receives it: Storm's ``Testing.testTuple``.

    ``fields`` default to ``field1, field2, ...``, as Storm's do.

    .. versionadded:: 0.2.0
    """
    names = fields if fields is not None else [f"field{i + 1}" for i in range(len(values))]
    declared = names if isinstance(names, Fields) else Fields(*names)
    if len(declared) != len(values):
        msg = f"test_tuple: {len(values)} value(s) {list(values)!r} for fields {list(declared)}"
        raise ValueError(msg)
    return Tuple(list(values), declared, component, stream, task)


test_tuple.__test__ = False  # type: ignore[attr-defined]  # pytest: a helper, not a test


@dataclass
class Emit:
    """One emit the bolt made."""

    stream: str
    values: list[Any]
    anchors: list[Tuple]
    task: int | None = None
    """The task of an ``emit_direct``."""


@dataclass
class RecordingCollector:
    """A bolt's collector that records emits, acks, fails and errors, and sends nothing.

    Works as an ``OutputCollector`` (``emit``, ``emit_direct``, ``ack``, ``fail``,
    ``reset_timeout``, ``report_error``) and as a ``BasicBolt``'s collector.

    .. versionadded:: 0.2.0
    """

    emits: list[Emit] = field(default_factory=list)
    acked_tuples: list[Tuple] = field(default_factory=list)
    failed_tuples: list[Tuple] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    timeouts_reset: list[Tuple] = field(default_factory=list)

    @property
    def emitted(self) -> list[tuple[str, list[Any]]]:
        """(stream, values) of every emit, in order."""
        return [(e.stream, e.values) for e in self.emits]

    @property
    def acked(self) -> int:
        """How many inputs were acked."""
        return len(self.acked_tuples)

    @property
    def failed(self) -> int:
        """How many inputs were failed."""
        return len(self.failed_tuples)

    def emit(
        self,
        values: Sequence[Any],
        anchors: Tuple | Sequence[Tuple] | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> list[int]:
        """Record the emit; no task receives it."""
        self.emits.append(Emit(stream, list(values), _anchors(anchors)))
        return []

    def emit_direct(
        self,
        task: int,
        values: Sequence[Any],
        anchors: Tuple | Sequence[Tuple] | None = None,
        stream: str = DEFAULT_STREAM_ID,
    ) -> None:
        """Record the direct emit."""
        self.emits.append(Emit(stream, list(values), _anchors(anchors), task))

    def ack(self, tup: Tuple) -> None:
        """Record the ack."""
        self.acked_tuples.append(tup)

    def fail(self, tup: Tuple) -> None:
        """Record the fail."""
        self.failed_tuples.append(tup)

    def fail_with(self, tup: Tuple, reason: FailReason) -> None:
        """Record the fail (the engine's form)."""
        self.failed_tuples.append(tup)

    def reset_timeout(self, tup: Tuple) -> None:
        """Record the reset."""
        self.timeouts_reset.append(tup)

    def report_error(self, error: BaseException) -> None:
        """Record the error."""
        self.errors.append(error)


def _anchors(anchors: Tuple | Sequence[Tuple] | None) -> list[Tuple]:
    if anchors is None:
        return []
    return [anchors] if isinstance(anchors, Tuple) else list(anchors)


def prepared(
    bolt: Bolt | BasicBolt,
    conf: dict[str, Any] | None = None,
    component: str = "bolt",
    collector: RecordingCollector | None = None,
) -> tuple[Any, RecordingCollector]:
    """``bolt`` prepared as task 1 of ``component`` with a real context, and its collector.

    The context is that of a topology of this one bolt fed by one source, so
    ``get_this_component_id``, ``get_this_task_id`` and the configuration answer as in
    a run. Call ``bolt.execute(test_tuple(...))`` (a ``BasicBolt``:
    ``bolt.execute(tup, collector)``) and read the collector.

    .. versionadded:: 0.2.0
    """
    from sparkstorm.testing.complete import FixedTupleSpout

    builder = TopologyBuilder()
    builder.set_spout("source", FixedTupleSpout([]))
    builder.set_bolt(component, bolt).shuffle_grouping("source")
    plan = Plan(builder.create_topology(), resolve(conf))
    task = plan.component_tasks(component)[0]
    context = TopologyContext(plan, task, plan.component_conf(component))
    recording = collector if collector is not None else RecordingCollector()
    if isinstance(bolt, BasicBolt):
        bolt.prepare(context.conf, context)
    else:
        bolt.prepare(context.conf, context, recording)  # type: ignore[arg-type]
    return bolt, recording
