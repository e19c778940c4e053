"""Declarers: ``OutputFieldsDeclarer`` and the spout/bolt declarers the builder returns."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self

from sparkstorm.config import TOPOLOGY_TASKS
from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.streams import SYSTEM_STREAM_FIELDS

if TYPE_CHECKING:
    from sparkstorm.topology.components import Component

DEFAULT_STREAM_ID = "default"

SHUFFLE = "shuffle"
FIELDS = "fields"
ALL = "all"
GLOBAL = "global"
NONE = "none"
DIRECT = "direct"
LOCAL_OR_SHUFFLE = "local_or_shuffle"
PARTIAL_KEY = "partial_key"
CUSTOM = "custom"


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """A declared output stream: its fields and whether it is a direct stream."""

    fields: Fields
    direct: bool = False


SYSTEM_STREAM = StreamInfo(SYSTEM_STREAM_FIELDS)
"""The ``__system`` stream every component has (Storm's ``SYSTEM_STREAM_ID``)."""


@dataclass(frozen=True, slots=True)
class GlobalStreamId:
    """A stream of a component, as a bolt subscribes to it."""

    component_id: str
    stream_id: str = DEFAULT_STREAM_ID


@dataclass(frozen=True, slots=True)
class Grouping:
    """How a stream's tuples are spread over a subscribing bolt's tasks."""

    kind: str
    fields: Fields | None = None
    custom: Any = None
    """A custom grouping's object (``prepare`` and ``choose_tasks``), copied per task."""


def check_reserved(kind: str, name: object) -> str:
    """Return ``name`` if it is a usable component or stream id, else raise naming it."""
    if not isinstance(name, str) or not name:
        msg = f"{kind} id must be a non-empty string, got {name!r}"
        raise InvalidTopologyError(msg)
    if name.startswith("__"):
        msg = f"{kind} id {name!r} is reserved: ids starting with '__' belong to the system"
        if kind == "stream":
            raise InvalidTopologyError(msg, stream=name)
        raise InvalidTopologyError(msg, component=name)
    return name


class OutputFieldsDeclarer:
    """Collects a component's ``declare`` calls (Storm's ``OutputFieldsDeclarer``).

    .. versionadded:: 0.1.0
    """

    def __init__(self, component_id: str) -> None:
        self._component_id = component_id
        self.streams: dict[str, StreamInfo] = {}

    def declare(
        self, fields: Fields, stream: str = DEFAULT_STREAM_ID, direct: bool = False
    ) -> None:
        """Declare ``stream`` with ``fields``; ``direct=True`` makes it a direct stream."""
        check_reserved("stream", stream)
        if not isinstance(fields, Fields):
            msg = (
                f"component {self._component_id!r} declared stream {stream!r} with "
                f"{fields!r}; pass a Fields, e.g. Fields('word')"
            )
            raise InvalidTopologyError(msg, component=self._component_id, stream=stream)
        if stream in self.streams:
            msg = f"component {self._component_id!r} declared stream {stream!r} twice"
            raise InvalidTopologyError(msg, component=self._component_id, stream=stream)
        self.streams[stream] = StreamInfo(fields, direct)

    def declare_stream(self, stream: str, fields: Fields, direct: bool = False) -> None:
        """Storm's ``declareStream``: the same as ``declare(fields, stream, direct)``."""
        self.declare(fields, stream, direct)


@dataclass
class ComponentDeclaration:
    """What the builder knows of one user component, before validation."""

    component_id: str
    obj: Component
    is_spout: bool
    parallelism: int
    conf: dict[str, Any] = field(default_factory=dict)
    inputs: list[tuple[GlobalStreamId, Grouping]] = field(default_factory=list)
    sites: list[tuple[str, int] | None] = field(default_factory=list)
    """Where each input was declared: the user's file and line of the grouping call."""


def check_tasks(component_id: str, n: Any) -> int:
    """``n`` as a component's task count, or an error naming the component."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        msg = (
            f"component {component_id!r}: topology.tasks (set_num_tasks) must be an int "
            f">= 1, got {n!r}"
        )
        raise InvalidTopologyError(msg, component=component_id)
    return n


class SpoutDeclarer:
    """Returned by ``set_spout``; sets task count and component configuration.

    .. versionadded:: 0.1.0
    """

    def __init__(self, declaration: ComponentDeclaration) -> None:
        self._declaration = declaration

    def set_num_tasks(self, n: int) -> Self:
        """Run the component as ``n`` tasks (default: its parallelism).

        As Storm's, it sets the component's ``topology.tasks``.
        """
        check_tasks(self._declaration.component_id, n)
        self._declaration.conf[TOPOLOGY_TASKS] = n
        return self

    def add_configuration(self, key: str, value: Any) -> Self:
        """Set a configuration key for this component's tasks only."""
        self._declaration.conf[key] = value
        return self


class BoltDeclarer(SpoutDeclarer):
    """Returned by ``set_bolt``; subscribes the bolt to streams with a grouping.

    Each grouping method takes the upstream ``component_id`` and ``stream`` (default
    ``"default"``) and returns the declarer, so calls chain.

    .. versionadded:: 0.1.0
    """

    def _subscribe(self, component_id: str, stream: str, grouping: Grouping) -> Self:
        self._declaration.inputs.append((GlobalStreamId(component_id, stream), grouping))
        self._declaration.sites.append(_caller())
        return self

    def shuffle_grouping(self, component_id: str, stream: str = DEFAULT_STREAM_ID) -> Self:
        """Spread tuples evenly over the bolt's tasks."""
        return self._subscribe(component_id, stream, Grouping(SHUFFLE))

    def fields_grouping(
        self, component_id: str, fields: Fields, stream: str = DEFAULT_STREAM_ID
    ) -> Self:
        """Send tuples with equal values of ``fields`` to the same task."""
        _not_java_order("fields_grouping", component_id, fields, stream)
        if not isinstance(fields, Fields):
            fields = Fields(fields)
        return self._subscribe(component_id, stream, Grouping(FIELDS, fields))

    def all_grouping(self, component_id: str, stream: str = DEFAULT_STREAM_ID) -> Self:
        """Send every tuple to every task of the bolt."""
        return self._subscribe(component_id, stream, Grouping(ALL))

    def global_grouping(self, component_id: str, stream: str = DEFAULT_STREAM_ID) -> Self:
        """Send every tuple to the bolt's lowest task id."""
        return self._subscribe(component_id, stream, Grouping(GLOBAL))

    def none_grouping(self, component_id: str, stream: str = DEFAULT_STREAM_ID) -> Self:
        """No preference: the same as shuffle grouping."""
        return self._subscribe(component_id, stream, Grouping(NONE))

    def direct_grouping(self, component_id: str, stream: str = DEFAULT_STREAM_ID) -> Self:
        """The emitter picks the task with ``emit_direct``; the stream must be direct."""
        return self._subscribe(component_id, stream, Grouping(DIRECT))

    def partial_key_grouping(
        self, component_id: str, fields: Fields, stream: str = DEFAULT_STREAM_ID
    ) -> Self:
        """As fields grouping, but each key may go to either of two tasks: the less loaded.

        Storm's ``partialKeyGrouping`` (key splitting with the power of two choices):
        a skewed key is spread over two tasks, so a bolt downstream must combine them.

        .. versionadded:: 0.2.0
        """
        _not_java_order("partial_key_grouping", component_id, fields, stream)
        if not isinstance(fields, Fields):
            fields = Fields(fields)
        return self._subscribe(component_id, stream, Grouping(PARTIAL_KEY, fields))

    def custom_grouping(
        self, component_id: str, grouping: Any, stream: str = DEFAULT_STREAM_ID
    ) -> Self:
        """Let ``grouping`` pick the tasks: Storm's ``CustomStreamGrouping``.

        ``grouping.prepare(context, stream, target_tasks)`` (optional) is called once
        per emitting task, on its own copy, with the bolt's task ids;
        ``grouping.choose_tasks(task_id, values)`` returns the target task ids of a
        tuple (``task_id`` is the emitting task's).

        .. versionadded:: 0.2.0
        """
        if not callable(getattr(grouping, "choose_tasks", None)):
            msg = (
                f"bolt {self._declaration.component_id!r}: custom_grouping on "
                f"{component_id!r} needs an object with choose_tasks(task_id, values), "
                f"got {type(grouping).__name__}"
            )
            raise InvalidTopologyError(msg, component=self._declaration.component_id)
        return self._subscribe(component_id, stream, Grouping(CUSTOM, custom=grouping))

    def local_or_shuffle_grouping(self, component_id: str, stream: str = DEFAULT_STREAM_ID) -> Self:
        """Prefer tasks in the same worker; every task shares one worker here, so: shuffle."""
        return self._subscribe(component_id, stream, Grouping(LOCAL_OR_SHUFFLE))


_TOPOLOGY_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _caller() -> tuple[str, int] | None:
    """The file and line of the innermost frame outside this package (the user's call)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.dirname(frame.f_code.co_filename) == _TOPOLOGY_PACKAGE:
        frame = frame.f_back  # type: ignore[assignment]
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def _not_java_order(method: str, component_id: str, fields: Any, stream: Any) -> None:
    """Storm's Java order, ``(component, stream, fields)``, said for what it is."""
    if isinstance(fields, str) and not isinstance(stream, str):
        shown = stream if isinstance(stream, Fields) else Fields(list(stream))
        msg = (
            f"{method}({component_id!r}, {fields!r}, {shown!r}): these are Storm's Java "
            f"arguments, (component, stream, fields); in Python the stream comes last: "
            f"{method}({component_id!r}, {shown!r}, {fields!r})"
        )
        raise InvalidTopologyError(msg, component=component_id, stream=fields)
