"""streamparse's component classes on sparkstorm's: a project's spouts and bolts unchanged.

``Spout``, ``ReliableSpout``, ``Bolt``, ``BatchingBolt`` and ``TicklessBatchingBolt``
keep streamparse's (pystorm's) methods, attributes and defaults, and run as sparkstorm
components: no subprocess, no JSON on stdin/stdout, the tuple tree tracked by the
engine's ackers. What cannot carry over, and why, is in docs/coming-from-streamparse.md:
an exception fails the tuple (or batch) and is reported, but does not end the process;
``TicklessBatchingBolt`` batches on tick tuples, not on a thread of its own.
"""

from __future__ import annotations

import logging
import os
from collections import Counter, defaultdict, namedtuple
from collections.abc import Callable
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from sparkstorm._types import FailReason, counts_as_attempt
from sparkstorm.config import TOPOLOGY_DEBUG, TOPOLOGY_NAME, TOPOLOGY_TICK_TUPLE_FREQ_SECS
from sparkstorm.streamparse.specs import ComponentSpec, JvmSpec, streams_of
from sparkstorm.topology import components as storm
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.streams import SYSTEM_COMPONENT_ID

if TYPE_CHECKING:
    from sparkstorm.reliability.collectors import OutputCollector
    from sparkstorm.reliability.spout_collector import SpoutOutputCollector
    from sparkstorm.topology.context import TopologyContext
    from sparkstorm.topology.declarers import OutputFieldsDeclarer
    from sparkstorm.topology.tuple import Tuple as StormTuple


class Tuple(NamedTuple):
    """A tuple as a streamparse bolt receives it: ``id, component, stream, task, values``.

    ``values`` is a named tuple of the source stream's fields (``tup.values.word``).
    """

    id: int
    component: str
    stream: str
    task: int
    values: tuple[Any, ...]


_LOG_LEVELS = {
    "critical": logging.CRITICAL,
    "error": logging.ERROR,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "info": logging.INFO,
    "debug": logging.DEBUG,
    "trace": logging.DEBUG,
}


class StormContext(dict):  # type: ignore[type-arg]
    """The ``context`` a streamparse component gets: Storm's handshake dict.

    Keys ``taskid``, ``componentid``, ``task->component`` and ``source->stream->fields``
    as Storm sends them to a multilang process; sparkstorm's
    :class:`~sparkstorm.TopologyContext` methods are reachable as attributes too.
    """

    def __init__(self, context: TopologyContext) -> None:
        topology = context._topology
        super().__init__(
            {
                "taskid": context.get_this_task_id(),
                "componentid": context.get_this_component_id(),
                "task->component": {str(t): c for t, c in topology.task_component.items()},
                "source->stream->fields": {
                    cid: {s: list(info.fields) for s, info in spec.streams.items()}
                    for cid, spec in topology.components.items()
                },
            }
        )
        self.topology_context = context

    def __getattr__(self, name: str) -> Any:
        context = self.__dict__.get("topology_context")
        if context is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(context, name)


class Component:
    """What streamparse's spouts and bolts share: class attributes, logging, errors.

    ``outputs`` (field names, or ``Stream`` objects), ``par`` and ``config`` are read
    by ``spec()``; ``initialize(storm_conf, context)`` runs once per task before
    anything else.
    """

    outputs: ClassVar[list[Any] | None] = None
    par: ClassVar[int | dict[str, int]] = 1
    config: ClassVar[dict[str, Any] | None] = None
    exit_on_exception: ClassVar[bool] = True
    """Accepted and ignored: an error fails its tuple and is reported; the task runs on."""
    transient: ClassVar[tuple[str, ...]] = ("context", "logger", "_collector")

    def _setup_component(
        self, conf: dict[str, Any], context: TopologyContext, collector: Any
    ) -> None:
        self._collector = collector
        self.storm_conf = conf
        self.context = StormContext(context)
        self.topology_name = conf.get(TOPOLOGY_NAME) or ""
        self.task_id = context.get_this_task_id()
        self.component_name = context.get_this_component_id()
        self.debug = bool(conf.get(TOPOLOGY_DEBUG, False))
        self.pid = os.getpid()
        self.logger = _component_logger(conf, self.topology_name, self.component_name, self.task_id)

    def initialize(self, storm_conf: dict[str, Any], context: StormContext) -> None:
        """Called once per task before the first ``next_tuple`` or ``process``."""

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the class's ``outputs``."""
        for name, stream in streams_of(self.outputs).items():
            declarer.declare(Fields(*stream.fields), name, stream.direct)

    def get_component_configuration(self) -> dict[str, Any] | None:
        """The class's ``config``."""
        return dict(self.config) if self.config else None

    def log(self, message: Any, level: str | None = None) -> None:
        """Log ``message`` at ``level`` (trace, debug, info, warn or error; default info)."""
        self.logger.log(_LOG_LEVELS.get(level or "info", logging.INFO), "%s", message)

    def raise_exception(self, exception: BaseException, tup: Any = None) -> None:
        """Report ``exception`` as this task's error (the UI and the run's summary show it)."""
        self._collector.report_error(exception)

    def report_metric(self, name: str, value: Any) -> None:
        """Not available: register a metric with ``self.context.register_metric`` instead."""
        msg = (
            f"{self.component_name}: report_metric({name!r}) needs a metric registered on "
            f"the JVM side; register one in initialize with "
            f"self.context.register_metric(name, metric, bucket_secs) instead"
        )
        raise NotImplementedError(msg)

    @classmethod
    def is_spout_class(cls) -> bool:
        """Whether the class is a spout (the DSL checks spouts and bolts apart)."""
        return False

    @classmethod
    def spec(cls, *args: Any, **kwargs: Any) -> ComponentSpec:
        """Only spouts and bolts have specs."""
        msg = f"Specifications should either be bolts or spouts. Given: {cls!r}"
        raise TypeError(msg)


def _component_logger(
    conf: dict[str, Any], topology: str, component: str, task: int
) -> logging.Logger:
    """The logger pystorm gives: ``pystorm.component.<component>``; files with a log path.

    Without a log path its lines go wherever the process's logging sends them (the
    ``sparkstorm`` command shows warnings and errors).
    """
    logger = logging.getLogger(f"pystorm.component.{component}")
    path = conf.get("pystorm.log.path")
    if not path:
        return logger
    level = _LOG_LEVELS.get(str(conf.get("pystorm.log.level", "info")).lower(), logging.INFO)
    if conf.get(TOPOLOGY_DEBUG):
        level = logging.DEBUG
    pattern = conf.get(
        "pystorm.log.file", "pystorm_{topology_name}_{component_name}_{task_id}_{pid}.log"
    )
    file = Path(path) / pattern.format(
        topology_name=topology, component_name=component, task_id=task, pid=os.getpid()
    )
    if not any(getattr(h, "baseFilename", None) == str(file) for h in logger.handlers):
        Path(path).mkdir(parents=True, exist_ok=True)
        handler = RotatingFileHandler(
            file,
            maxBytes=int(conf.get("pystorm.log.max_bytes", 1_000_000)),
            backupCount=int(conf.get("pystorm.log.backup_count", 10)),
        )
        form = conf.get(
            "pystorm.log.format", "%(asctime)s - %(name)s - %(levelname)s - %(message)s"
        )
        handler.setFormatter(logging.Formatter(form))
        handler.setLevel(level)
        logger.addHandler(handler)
    logger.setLevel(level)
    return logger


class Spout(Component, storm.Spout):
    """A streamparse spout: override ``next_tuple``, and ``ack``/``fail`` to replay.

    ``self.emit(values, tup_id=...)`` emits a tracked tuple: ``ack(tup_id)`` follows once
    its whole tree is processed, ``fail(tup_id)`` if it fails or times out.
    """

    def open(
        self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector
    ) -> None:
        """Set up the streamparse attributes, then call ``initialize``."""
        self._setup_component(conf, context, collector)
        self.initialize(conf, self.context)

    def next_tuple(self) -> None:
        """Emit tuples as necessary; must not block."""
        raise NotImplementedError

    def emit(
        self,
        tup: list[Any] | tuple[Any, ...],
        tup_id: Any = None,
        stream: str | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        """Emit ``tup``; with a ``tup_id`` it is tracked. The target task ids on request."""
        values = _checked_values(tup)
        stream = stream or "default"
        if direct_task is not None:
            self._collector.emit_direct(direct_task, values, tup_id, stream)
            tasks = [direct_task]
        else:
            tasks = self._collector.emit(values, tup_id, stream)
        return list(tasks) if need_task_ids else None

    def ack(self, tup_id: Any) -> None:
        """The tree of ``tup_id`` was fully processed."""

    def fail(self, tup_id: Any, reason: FailReason | None = None) -> None:
        """The tree of ``tup_id`` failed or timed out; the default ignores it.

        A subclass may take ``tup_id`` only, as in streamparse; taking ``reason`` too, it
        learns why (see :class:`~sparkstorm.FailReason`).
        """

    @classmethod
    def is_spout_class(cls) -> bool:
        """A spout."""
        return True

    @classmethod
    def spec(cls, name: str | None = None, par: Any = None, config: Any = None) -> ComponentSpec:
        """The spout's place in a ``Topology``; ``name`` defaults to the attribute's."""
        return ComponentSpec(cls, name=name, par=par, config=config)


class ReliableSpout(Spout):
    """A spout that replays a failed tuple up to ``max_fails`` times, then gives it up.

    As pystorm's, plus sparkstorm's failure reasons: a failure that is not the tuple's
    own (a graceful stop, a rollback of stateful bolts) replays it without counting.
    """

    max_fails: ClassVar[int] = 3

    def open(
        self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector
    ) -> None:
        """Start with nothing unacked, then as :class:`Spout`."""
        self.failed_tuples: Counter[Any] = Counter()
        self.unacked_tuples: dict[Any, tuple[Any, ...]] = {}
        super().open(conf, context, collector)

    def emit(
        self,
        tup: list[Any] | tuple[Any, ...],
        tup_id: Any = None,
        stream: str | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        """Emit a tracked tuple and keep it for replay; ``tup_id`` is required."""
        if tup_id is None:
            msg = (
                f"{self.component_name}: You must provide a tuple ID when emitting with a "
                "ReliableSpout in order for the tuple to be tracked."
            )
            raise ValueError(msg)
        self.unacked_tuples[tup_id] = (tup, stream, direct_task, need_task_ids)
        return super().emit(tup, tup_id, stream, direct_task, need_task_ids)

    def ack(self, tup_id: Any) -> None:
        """Forget ``tup_id``."""
        self.failed_tuples.pop(tup_id, None)
        if self.unacked_tuples.pop(tup_id, None) is None:
            self.logger.error("Received ack for unknown tuple ID: %r", tup_id)

    def fail(self, tup_id: Any, reason: FailReason | None = None) -> None:
        """Replay ``tup_id``, or give it up (ack it) after ``max_fails`` failures of its own."""
        saved = self.unacked_tuples.get(tup_id)
        if saved is None:
            self.logger.error("Received fail for unknown tuple ID: %r", tup_id)
            return
        if reason is not None and reason.kind == "shutdown":
            return  # the topology is stopping: nothing more is emitted
        own = counts_as_attempt(reason)
        if own and self.failed_tuples[tup_id] >= self.max_fails:
            self.logger.info(
                "Acking tuple ID %r after it exceeded retry limit (%r)", tup_id, self.max_fails
            )
            self.ack(tup_id)
            return
        tup, stream, direct_task, need_task_ids = saved
        self.emit(tup, tup_id, stream, direct_task, need_task_ids)
        if own:
            self.failed_tuples[tup_id] += 1


class Bolt(Component, storm.Bolt):
    """A streamparse bolt: override ``process(tup)``, and ``process_tick`` for ticks.

    ``auto_ack`` acks each input after ``process`` returns, ``auto_anchor`` anchors
    emits to it, ``auto_fail`` fails it when ``process`` raises (default: all three).
    """

    auto_anchor: ClassVar[bool] = True
    auto_ack: ClassVar[bool] = True
    auto_fail: ClassVar[bool] = True
    _acks_each_input: ClassVar[bool] = True
    """Whether ``auto_ack`` acks an input once ``process`` returns (a batch's wait)."""

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Set up the streamparse attributes, then call ``initialize``."""
        self._setup_component(conf, context, collector)
        self._pending: dict[int, StormTuple] = {}
        self._next_id = 0
        self._current_tups: list[Tuple] = []
        self.initialize(conf, self.context)

    def process(self, tup: Tuple) -> None:
        """Process one input tuple."""
        raise NotImplementedError

    def process_tick(self, tup: Tuple) -> None:
        """A tick tuple (``topology.tick.tuple.freq.secs``); the default ignores it."""

    @staticmethod
    def is_tick(tup: Tuple) -> bool:
        """Whether ``tup`` is a tick tuple."""
        return tup.component == SYSTEM_COMPONENT_ID and tup.stream == "__tick"

    def execute(self, tup: StormTuple) -> None:
        """Hand ``tup`` to ``process`` or ``process_tick``, acking or failing it as set."""
        mine = self._received(tup)
        self._current_tups = [mine]
        try:
            if tup.is_tick():
                self.process_tick(mine)
            else:
                self.process(mine)
        except Exception as exc:
            if not self.auto_fail:
                self.raise_exception(exc, mine)
                return  # the tuple stays pending: it times out unless acked later
            self._pending.pop(mine.id, None)
            raise  # the engine reports it and fails the tuple's trees (reason "error")
        finally:
            self._current_tups = []
        if self.auto_ack and self._acks_each_input and mine.id in self._pending:
            self.ack(mine)

    def _received(self, tup: StormTuple) -> Tuple:
        self._next_id += 1
        self._pending[self._next_id] = tup
        fields = tup.fields
        named = _VALUE_TYPES.get(id(fields))
        if named is None or named[0] is not fields:
            named = _values_type(tup.source_component, tup.source_stream, fields)
        values = named[1](tup.values)
        return Tuple(
            self._next_id, tup.source_component, tup.source_stream, tup.source_task, values
        )

    def _storm_tuple(self, tup: Tuple | int, doing: str, take: bool = False) -> StormTuple:
        """The engine's tuple behind ``tup`` (or its id); ``take`` forgets it."""
        key = tup.id if isinstance(tup, Tuple) else tup
        found = self._pending.pop(key, None) if take else self._pending.get(key)
        if found is None:
            msg = (
                f"{self.component_name}: {doing} tuple {key!r}, which was acked or failed "
                f"already (or never received); with auto_ack, process() need not ack"
            )
            raise ValueError(msg)
        return found

    def emit(
        self,
        tup: list[Any] | tuple[Any, ...],
        stream: str | None = None,
        anchors: list[Any] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        """Emit ``tup`` anchored to ``anchors`` (default: the input, with ``auto_anchor``)."""
        values = _checked_values(tup)
        if anchors is None:
            anchors = self._current_tups if self.auto_anchor else []
        storm_anchors = [self._storm_tuple(a, "anchored onto") for a in anchors]
        stream = stream or "default"
        if direct_task is not None:
            self._collector.emit_direct(direct_task, values, storm_anchors, stream)
            tasks = [direct_task]
        else:
            tasks = self._collector.emit(values, storm_anchors, stream)
        return list(tasks) if need_task_ids else None

    def ack(self, tup: Tuple | int) -> None:
        """``tup`` (or its id) is processed."""
        self._collector.ack(self._storm_tuple(tup, "acked", take=True))

    def fail(self, tup: Tuple | int) -> None:
        """``tup`` (or its id) failed: its spout's ``fail`` follows at once."""
        self._collector.fail(self._storm_tuple(tup, "failed", take=True))

    def _fail_for(self, tup: Tuple, exc: BaseException) -> None:
        """Fail ``tup`` because ``exc`` was raised (reason ``error``, as the engine's)."""
        found = self._pending.pop(tup.id, None)
        if found is not None:
            text = f"{type(exc).__name__}: {exc}"
            self._collector.fail_with(
                found, FailReason("error", self.component_name, self.task_id, text)
            )

    @classmethod
    def spec(
        cls,
        name: str | None = None,
        inputs: Any = None,
        par: Any = None,
        config: Any = None,
    ) -> ComponentSpec:
        """The bolt's place in a ``Topology``, subscribed to ``inputs``."""
        return ComponentSpec(cls, name=name, inputs=inputs, par=par, config=config)


class BatchingBolt(Bolt):
    """A bolt that groups its inputs between tick tuples: ``process_batch(key, tups)``.

    Every ``ticks_between_batches`` + 1 ticks, as pystorm's, each batch of ``group_key``
    goes to ``process_batch``; with ``auto_ack`` its tuples are then acked, and emits
    are anchored to them all. Needs ``topology.tick.tuple.freq.secs`` (in the bolt's
    ``config`` or the topology's).
    """

    ticks_between_batches: ClassVar[int] = 1
    _acks_each_input: ClassVar[bool] = False

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Check that ticks come; start with no batches, then as :class:`Bolt`."""
        if not conf.get(TOPOLOGY_TICK_TUPLE_FREQ_SECS):
            msg = no_ticks_message(type(self).__name__, context.get_this_component_id())
            raise ValueError(msg)
        self._batches: defaultdict[Any, list[Tuple]] = defaultdict(list)
        self._tick_counter = 0
        super().prepare(conf, context, collector)

    def group_key(self, tup: Tuple) -> Any:
        """The batch ``tup`` joins (default None: one batch)."""
        return None

    def process_batch(self, key: Any, tups: list[Tuple]) -> None:
        """Process one batch."""
        raise NotImplementedError

    def process(self, tup: Tuple) -> None:
        """Add ``tup`` to its batch (do not override: override ``group_key``)."""
        self._batches[self.group_key(tup)].append(tup)

    def emit(
        self,
        tup: list[Any] | tuple[Any, ...],
        stream: str | None = None,
        anchors: list[Any] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> None:
        """As :meth:`Bolt.emit`, without task ids."""
        super().emit(tup, stream, anchors, direct_task, need_task_ids=False)

    def process_tick(self, tick_tup: Tuple) -> None:
        """Count ticks; after ``ticks_between_batches`` + 1 of them, process the batches."""
        self._tick_counter += 1
        self.ack(tick_tup)
        if self._tick_counter > self.ticks_between_batches and self._batches:
            self.process_batches()
            self._tick_counter = 0

    def process_batches(self) -> None:
        """Process every batch, acking its tuples (``auto_ack``).

        A batch whose ``process_batch`` raises fails its tuples (``auto_fail``) and the
        error is reported; the batches after it wait for the next tick.
        """
        while self._batches:
            key = next(iter(self._batches))
            batch = self._batches.pop(key)
            self._current_tups = batch
            try:
                self.process_batch(key, batch)
            except Exception as exc:
                if self.auto_fail:
                    for one in batch:
                        self._fail_for(one, exc)
                else:
                    self.raise_exception(exc, batch)
                    return
                raise
            finally:
                self._current_tups = []
            if self.auto_ack:
                for one in batch:
                    if one.id in self._pending:
                        self.ack(one)


class TicklessBatchingBolt(BatchingBolt):
    """A batching bolt timed by ``secs_between_batches`` instead of counted ticks.

    pystorm runs its batches on a thread of its own; here the bolt asks for tick tuples
    every ``secs_between_batches`` and processes its batches on each, on the task's
    thread, so emits and acks stay on the thread that owns the collector.
    """

    secs_between_batches: ClassVar[float] = 2
    ticks_between_batches: ClassVar[int] = 0

    def get_component_configuration(self) -> dict[str, Any] | None:
        """The class's ``config``, with ticks every ``secs_between_batches``."""
        return {
            **(super().get_component_configuration() or {}),
            TOPOLOGY_TICK_TUPLE_FREQ_SECS: self.secs_between_batches,
        }


class _Refused(Component):
    """A JVM or shell component: its spec is accepted, and refused when the topology is built.

    streamparse accepts it in a ``Topology``; :func:`~sparkstorm.streamparse.to_topology`
    refuses it with one error naming the component.
    """

    @classmethod
    def spec(cls, name: str | None = None, **kwargs: Any) -> ComponentSpec:
        """The spec, from streamparse's arguments (``full_class_name``, ``command``, ...)."""
        command = " ".join(str(kwargs[k]) for k in ("command", "script") if kwargs.get(k))
        detail = kwargs.get("full_class_name") or command or "serialized Java"
        kept = {k: kwargs.get(k) for k in ("inputs", "par", "config", "outputs")}
        return JvmSpec(cls, cls.__name__, detail, name=name, **kept)


class JavaSpout(_Refused):
    """A JVM spout (refused when the topology is built)."""

    @classmethod
    def is_spout_class(cls) -> bool:
        """A spout."""
        return True


class JavaBolt(_Refused):
    """A JVM bolt (refused when the topology is built)."""


class ShellSpout(JavaSpout):
    """A spout run as a command (refused when the topology is built)."""


class ShellBolt(_Refused):
    """A bolt run as a command (refused when the topology is built)."""


def no_ticks_message(cls: str, component: str) -> str:
    """Why a batching bolt without tick tuples cannot run, and what to do."""
    return (
        f"{cls} {component!r} gets no tick tuples, so its batches would never be "
        f"processed: set {TOPOLOGY_TICK_TUPLE_FREQ_SECS!r} in its config "
        f"(spec(config={{...}})) or the topology's"
    )


def _checked_values(tup: Any) -> list[Any]:
    if not isinstance(tup, list | tuple):
        msg = f"All Tuples must be either lists or tuples, received {type(tup)!r} instead."
        raise TypeError(msg)
    return list(tup)


_VALUE_TYPES: dict[int, tuple[Fields, Callable[[Any], tuple[Any, ...]]]] = {}
"""A stream's fields object (by identity: one per stream and process) -> the maker of
its values, checked by identity, as an id may be reused once the object is gone."""


def _values_type(
    component: str, stream: str, fields: Fields
) -> tuple[Fields, Callable[[Any], tuple[Any, ...]]]:
    """The values as pystorm gives them: a named tuple of the source's fields."""
    make: Callable[[Any], tuple[Any, ...]] = tuple  # a tick's: a plain tuple, as pystorm's
    if component != SYSTEM_COMPONENT_ID:
        name = "".join(part.title() for part in (component, stream)) + "Tuple"
        name = "".join(c if c.isalnum() else "_" for c in name)
        make = namedtuple(name, list(fields), rename=True)._make  # type: ignore[attr-defined]
    entry = _VALUE_TYPES[id(fields)] = (fields, make)
    return entry
