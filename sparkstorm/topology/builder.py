"""``TopologyBuilder`` and the validated ``Topology`` it creates (Storm's ``StormTopology``)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from sparkstorm.config import TOPOLOGY_TASKS
from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.components import BasicBolt, Bolt, Component, Spout
from sparkstorm.topology.declarers import (
    DIRECT,
    FIELDS,
    PARTIAL_KEY,
    SYSTEM_STREAM,
    BoltDeclarer,
    ComponentDeclaration,
    GlobalStreamId,
    Grouping,
    OutputFieldsDeclarer,
    SpoutDeclarer,
    StreamInfo,
    check_reserved,
    check_tasks,
)
from sparkstorm.topology.streams import SYSTEM_STREAM_ID


@dataclass(frozen=True)
class ComponentSpec:
    """One validated user component: its object, task count, streams and subscriptions."""

    component_id: str
    obj: Component
    is_spout: bool
    num_tasks: int
    conf: dict[str, Any]
    streams: dict[str, StreamInfo]
    inputs: tuple[tuple[GlobalStreamId, Grouping], ...]


@dataclass(frozen=True)
class Topology:
    """A validated topology, ready to submit; components in declaration order.

    .. versionadded:: 0.1.0
    """

    components: dict[str, ComponentSpec]

    @property
    def spouts(self) -> list[ComponentSpec]:
        """The spout components, in declaration order."""
        return [c for c in self.components.values() if c.is_spout]

    @property
    def bolts(self) -> list[ComponentSpec]:
        """The bolt components, in declaration order."""
        return [c for c in self.components.values() if not c.is_spout]


class TopologyBuilder:
    """Builds a topology from spouts and bolts (Storm's ``TopologyBuilder``).

    Examples
    --------
    >>> builder = TopologyBuilder()
    >>> # builder.set_spout("sentences", SentenceSpout())
    >>> # builder.set_bolt("split", SplitSentence(), 4).shuffle_grouping("sentences")
    >>> # topology = builder.create_topology()

    .. versionadded:: 0.1.0
    """

    def __init__(self) -> None:
        self._declarations: dict[str, ComponentDeclaration] = {}

    def set_spout(self, component_id: str, spout: Spout, parallelism: int = 1) -> SpoutDeclarer:
        """Add a spout run as ``parallelism`` tasks."""
        if not isinstance(spout, Spout):
            msg = (
                f"set_spout({component_id!r}, ...) needs a Spout instance, got "
                f"{type(spout).__name__}; subclass sparkstorm.Spout"
            )
            raise InvalidTopologyError(msg, component=component_id)
        return SpoutDeclarer(self._add(component_id, spout, True, parallelism))

    def set_bolt(
        self, component_id: str, bolt: Bolt | BasicBolt, parallelism: int = 1
    ) -> BoltDeclarer:
        """Add a bolt run as ``parallelism`` tasks; subscribe it with the returned declarer."""
        if not isinstance(bolt, Bolt | BasicBolt):
            msg = (
                f"set_bolt({component_id!r}, ...) needs a Bolt or BasicBolt instance, got "
                f"{type(bolt).__name__}; subclass sparkstorm.Bolt or sparkstorm.BasicBolt"
            )
            raise InvalidTopologyError(msg, component=component_id)
        return BoltDeclarer(self._add(component_id, bolt, False, parallelism))

    def _add(
        self, component_id: str, obj: Component, is_spout: bool, parallelism: int
    ) -> ComponentDeclaration:
        check_reserved("component", component_id)
        if component_id in self._declarations:
            msg = f"component id {component_id!r} is used twice; ids must be unique"
            raise InvalidTopologyError(msg, component=component_id)
        if not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1:
            msg = (
                f"component {component_id!r}: parallelism must be an int >= 1, got {parallelism!r}"
            )
            raise InvalidTopologyError(msg, component=component_id)
        declaration = ComponentDeclaration(component_id, obj, is_spout, parallelism)
        self._declarations[component_id] = declaration
        return declaration

    def create_topology(self) -> Topology:
        """Validate and return the topology.

        Raises
        ------
        InvalidTopologyError
            For a topology without spouts, a subscription to an unknown component or
            stream, a grouping field the stream does not declare, or a grouping that does
            not match the stream's direct flag; the error names component, stream and field.
        """
        if not any(d.is_spout for d in self._declarations.values()):
            msg = "a topology needs at least one spout; add one with set_spout()"
            raise InvalidTopologyError(msg)
        streams = {cid: _declared_streams(d) for cid, d in self._declarations.items()}
        components: dict[str, ComponentSpec] = {}
        for cid, d in self._declarations.items():
            for (source, grouping), site in zip(d.inputs, d.sites, strict=True):
                _check_subscription(cid, source, grouping, streams, site)
            conf = {**(d.obj.get_component_configuration() or {}), **d.conf}
            tasks = conf.get(TOPOLOGY_TASKS)  # Storm's setNumTasks, or the component's own
            components[cid] = ComponentSpec(
                cid,
                d.obj,
                d.is_spout,
                d.parallelism if tasks is None else check_tasks(cid, tasks),
                conf,
                streams[cid],
                tuple(d.inputs),
            )
        return Topology(components)


def _declared_streams(declaration: ComponentDeclaration) -> dict[str, StreamInfo]:
    declarer = OutputFieldsDeclarer(declaration.component_id)
    declaration.obj.declare_output_fields(declarer)
    return declarer.streams


def _check_subscription(
    bolt_id: str,
    source: GlobalStreamId,
    grouping: Grouping,
    streams: dict[str, dict[str, StreamInfo]],
    site: tuple[str, int] | None = None,
) -> None:
    src, stream = source.component_id, source.stream_id
    if src not in streams:
        near = difflib.get_close_matches(src, list(streams), 1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        msg = (
            f"bolt {bolt_id!r} subscribes to unknown component {src!r} ({hint}known: "
            f"{sorted(streams)})"
        )
        raise InvalidTopologyError(msg, component=bolt_id, stream=stream, site=site)
    info = streams[src].get(stream) or (SYSTEM_STREAM if stream == SYSTEM_STREAM_ID else None)
    if info is None:
        msg = (
            f"bolt {bolt_id!r} subscribes to stream {stream!r} of {src!r}, which {src!r} "
            f"does not declare (declared: {sorted(streams[src])}); declare it in "
            f"{src!r}.declare_output_fields"
        )
        raise InvalidTopologyError(msg, component=bolt_id, stream=stream)
    if grouping.kind in (FIELDS, PARTIAL_KEY):
        assert grouping.fields is not None
        for name in grouping.fields:
            if name not in info.fields:
                msg = (
                    f"bolt {bolt_id!r} groups stream {stream!r} of {src!r} by field "
                    f"{name!r}, which that stream does not declare "
                    f"(declared: {info.fields.to_list()})"
                )
                raise InvalidTopologyError(msg, component=bolt_id, stream=stream, field=name)
    if (grouping.kind == DIRECT) != info.direct:
        if info.direct:
            msg = (
                f"bolt {bolt_id!r} subscribes to direct stream {stream!r} of {src!r} with "
                f"{grouping.kind} grouping; a direct stream needs direct_grouping"
            )
        else:
            msg = (
                f"bolt {bolt_id!r} uses direct_grouping on stream {stream!r} of {src!r}, "
                f"which is not direct; declare it with direct=True"
            )
        raise InvalidTopologyError(msg, component=bolt_id, stream=stream)
