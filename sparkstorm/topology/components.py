"""The classes users write: ``Spout``, ``Bolt``, ``BasicBolt`` and the stateful bolts.

Storm's ``ISpout``, ``IRichBolt``, ``IBasicBolt`` and ``IStatefulBolt``.

Only the method a component must have is abstract; every other hook is a no-op default.
Components are copied (pickled) once per task, as Storm serializes them: open clients and
connections in ``open`` / ``prepare``, not in ``__init__``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from sparkstorm._types import FailReason, MsgId
    from sparkstorm.reliability.collectors import BasicOutputCollector, OutputCollector
    from sparkstorm.reliability.spout_collector import SpoutOutputCollector
    from sparkstorm.state.key_value import KeyValueState
    from sparkstorm.topology.context import TopologyContext
    from sparkstorm.topology.declarers import OutputFieldsDeclarer
    from sparkstorm.topology.tuple import Tuple


class Component:
    """What spouts and bolts share: output declaration and component configuration."""

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the streams this component emits and their fields.

        Called once on the driver by ``create_topology``. A component that emits must
        declare; emitting to an undeclared stream is an error naming the stream.
        """

    def get_component_configuration(self) -> dict[str, Any] | None:
        """Configuration for this component's tasks only (overrides the topology's)."""
        return None


class ChecksSubmission(ABC):
    """A component that must see the topology's configuration at submit to know it can run.

    Storm's submitter checks the configuration; such a component adds a check of its own
    (a Trident topology finding where to keep its progress), so that a topology that
    cannot run as configured is refused before any task starts or anything is written.
    """

    @abstractmethod
    def check_submission(self, conf: dict[str, Any]) -> None:
        """Raise :class:`~sparkstorm.InvalidTopologyError` saying what to change, if need be."""


class UsesRunMemory:
    """A component that keeps something in the run's memory, in the driver.

    What must outlive the workers but not the run (Trident's progress and
    ``MemoryMapState``s under the default provider): a run, or a ``LocalCluster``,
    serves its tasks a memory when one of its components is such a component.
    """


class HoldsWork(ABC):
    """A spout that may hold work back while it emits nothing.

    A batch waiting to be emitted again after its source failed, say. The topology is
    not idle meanwhile, so an until-idle run, or a test's ``wait_until_idle``, does not
    end on the wait.
    """

    @abstractmethod
    def holding(self) -> str | None:
        """What it holds back, in words; None when nothing."""


class CompletableSpout(ABC):
    """A spout whose input ends, and that says when: Storm's ``CompletableSpout``.

    An until-idle run (``sparkstorm run --until-idle``, ``sparkstorm.run`` without a
    duration) ends as soon as every spout task is exhausted, nothing is in flight and
    every message has had its outcome, without waiting out ``sparkstorm.idle.grace.secs``:
    that grace is for spouts that emit nothing now but may later (a broker between two
    deliveries). A spout without this waits the grace, as before.

    .. versionadded:: 0.5.0
    """

    @abstractmethod
    def is_exhausted(self) -> bool:
        """Whether this task will emit nothing more, retries included.

        True only once every message it will ever emit has been emitted: a message
        that failed and waits to be emitted again makes it not exhausted (its ``fail``
        runs before the run looks again). Called on the spout's thread, between its
        other calls, as often as the run looks for its end.
        """


class Spout(Component, ABC):
    """A source of tuples (Storm's ``ISpout``).

    Every method of a spout task runs on the driver, on one thread: ``next_tuple``,
    ``ack`` and ``fail`` of one task never run concurrently.

    .. versionadded:: 0.1.0
    """

    def open(
        self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector
    ) -> None:
        """Called once per task before anything else; keep ``collector`` to emit."""

    def close(self) -> None:
        """Called once when the topology is killed or shut down; not guaranteed on a crash."""

    def activate(self) -> None:
        """Called when the topology becomes active (including at submit, if active)."""

    def deactivate(self) -> None:
        """Called when the topology is deactivated; ``next_tuple`` is not called until active."""

    @abstractmethod
    def next_tuple(self) -> None:
        """Emit zero or more tuples through the collector, then return.

        Called on the driver while the topology is active and fewer than
        ``topology.max.spout.pending`` tracked tuples are pending for this task; never
        concurrently with :meth:`ack` or :meth:`fail` of the same task. Must not block:
        return without emitting when there is nothing to emit.
        """

    def ack(self, msg_id: MsgId) -> None:
        """The tuple tree of ``msg_id`` was fully processed; called on the emitting task."""

    def fail(self, msg_id: MsgId, reason: FailReason | None = None) -> None:
        """The tuple tree of ``msg_id`` failed or timed out; replay it if it matters.

        ``reason`` says why (see :class:`~sparkstorm.FailReason`). A spout may define
        ``fail(self, msg_id)`` with one argument, as in Storm; it is then called that way.
        """

    def message_key(self, msg_id: MsgId) -> str | int | None:
        """A key naming the source message behind ``msg_id`` in any run, or None.

        A stream offset or a publisher's message id: the same message, delivered again
        after a driver restart, must give the same key, and no other message may. With
        stateful bolts, each checkpoint records the keys of the messages it commits; if
        the driver dies before this spout has acked them to its source, the restarted run
        acks them when they come again instead of counting them twice. Called on the
        driver, between ``emit`` and the message's ``ack`` or ``fail``. The default, None,
        opts out (a replay after such a crash is then processed again).

        .. versionadded:: 0.2.0
        """
        return None


class Bolt(Component, ABC):
    """A processing step (Storm's ``IRichBolt``): ack or fail every input yourself.

    Runs in the engine's workers (Spark executors on the ``spark`` engine). Attributes
    persist across supersteps; name connections and clients in ``transient`` so they are
    never snapshotted, and re-create them in ``prepare``.

    .. versionadded:: 0.1.0
    """

    transient: ClassVar[tuple[str, ...]] = ()

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Called once per task instance before its first ``execute``; keep ``collector``."""

    @abstractmethod
    def execute(self, tup: Tuple) -> None:
        """Process one input tuple; emit anchored to it, then ``ack`` or ``fail`` it.

        Called once per tuple, in order per sender. Raising reports the error (with
        component and task) and fails the input's tree; the topology keeps running.
        """

    def cleanup(self) -> None:
        """Called when the topology is killed, where the task's instance still lives."""


class BasicBolt(Component, ABC):
    """A bolt whose emits are anchored to its input and whose input is acked for it.

    Returning from ``execute`` acks the input; raising :class:`FailedException` fails it.

    .. versionadded:: 0.1.0
    """

    transient: ClassVar[tuple[str, ...]] = ()

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """Called once per task instance before its first ``execute``."""

    @abstractmethod
    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        """Process one input tuple; emits through ``collector`` are anchored to it."""

    def cleanup(self) -> None:
        """Called when the topology is killed, where the task's instance still lives."""


class _StatefulHooks:
    """Storm's ``IStatefulComponent``: the state, and hooks around each checkpoint."""

    def init_state(self, state: KeyValueState) -> None:
        """Called once per task, after ``prepare`` and before the first ``execute``.

        ``state`` holds what was committed at the last checkpoint (empty the first
        time); keep it, and ``put``/``get`` through it. Changes become durable at the
        next checkpoint; until then a failure rolls them back.
        """

    def pre_prepare(self, txid: int) -> None:
        """Called before the state is staged for checkpoint ``txid``."""

    def pre_commit(self, txid: int) -> None:
        """Called before checkpoint ``txid`` is folded into the state (every task staged)."""

    def pre_rollback(self) -> None:
        """Called before the state rolls back to the last checkpoint (a failure happened)."""


class StatefulBolt(_StatefulHooks, Bolt):
    """A bolt whose state is checkpointed (Storm's ``IStatefulBolt``/``BaseStatefulBolt``).

    Keep state in the :class:`~sparkstorm.KeyValueState` handed to ``init_state``; it is
    committed for every stateful task together, at one superstep boundary, every
    ``topology.state.checkpoint.interval.ms``. An input you ``ack`` is acked to its
    spout only once a checkpoint holds its effect, and any failure that could have left
    an effect of a failed tree in the state rolls every stateful task back to the last
    checkpoint and replays what was not committed: each message's effect is counted
    once in committed state (see docs/reliability.md). Anchor what you emit and ack
    every input, as with any bolt.

    .. versionadded:: 0.2.0
    """


class BasicStatefulBolt(_StatefulHooks, BasicBolt):
    """A :class:`StatefulBolt` with :class:`BasicBolt`'s anchoring and acking.

    .. versionadded:: 0.2.0
    """


def is_stateful(obj: object) -> bool:
    """Whether a component keeps checkpointed state (stateful windowed bolts too)."""
    return isinstance(obj, _StatefulHooks)
