"""A streamparse ``Topology`` class as a sparkstorm topology and configuration."""

from __future__ import annotations

from typing import Any, TypeGuard

from sparkstorm.config import TOPOLOGY_TASKS, TOPOLOGY_TICK_TUPLE_FREQ_SECS
from sparkstorm.errors import InvalidTopologyError
from sparkstorm.streamparse.components import BatchingBolt, no_ticks_message
from sparkstorm.streamparse.specs import ComponentSpec, GroupingSpec, JvmSpec, TopologyType
from sparkstorm.topology.builder import Topology, TopologyBuilder
from sparkstorm.topology.declarers import BoltDeclarer
from sparkstorm.topology.fields import Fields


def is_streamparse_topology(value: Any) -> TypeGuard[TopologyType]:
    """Whether ``value`` is a streamparse ``Topology`` subclass (not the base class)."""
    return isinstance(value, TopologyType) and bool(value.specs)


def to_topology(
    topology_class: TopologyType, environment: str | None = None
) -> tuple[Topology, dict[str, Any]]:
    """Build ``topology_class`` as sparkstorm's topology, with its ``config``.

    ``environment`` picks the parallelism of a component whose ``par`` is a dict per
    environment.

    Raises
    ------
    InvalidTopologyError
        Naming the component: a JVM or shell component, a JVM grouping, a ``par`` with
        no entry for the environment.
    """
    builder = TopologyBuilder()
    for spec in topology_class.specs:
        _refuse_jvm(spec)
        name = str(spec.name)
        parallelism = _parallelism(spec, environment)
        component = spec.component_cls()
        if spec.component_cls.is_spout_class():  # type: ignore[attr-defined]
            declarer: Any = builder.set_spout(name, component, parallelism)
        else:
            declarer = builder.set_bolt(name, component, parallelism)
            for source, grouping in spec.inputs.items():
                _subscribe(declarer, name, source.componentId, source.streamId, grouping)
        for key, value in spec.config.items():
            if key == TOPOLOGY_TASKS:
                declarer.set_num_tasks(value)
            else:
                declarer.add_configuration(key, value)
    return builder.create_topology(), dict(topology_class.config)


def check_ticks(topology: Topology, conf: dict[str, Any]) -> None:
    """Refuse a ``BatchingBolt`` that gets no tick tuples, before anything starts.

    Its batches would never be processed: its tuples would wait for their timeout.
    ``conf`` is the topology's final configuration (command line included).
    """
    for spec in topology.bolts:
        # spec.conf holds the component's own configuration too; the task gets both merged
        ticks = {**conf, **spec.conf}.get(TOPOLOGY_TICK_TUPLE_FREQ_SECS)
        if isinstance(spec.obj, BatchingBolt) and not ticks:
            msg = no_ticks_message(type(spec.obj).__name__, spec.component_id)
            raise InvalidTopologyError(msg, component=spec.component_id)


def _refuse_jvm(spec: ComponentSpec) -> None:
    if isinstance(spec, JvmSpec):
        msg = (
            f"component {spec.name!r} is a {spec.kind} ({spec.detail}): sparkstorm runs "
            f"Python components only, in its own workers, with no JVM Storm to run it in; "
            f"write it as a Python Spout or Bolt (streamparse.Spout / streamparse.Bolt)"
        )
        raise InvalidTopologyError(msg, component=spec.name)


def _parallelism(spec: ComponentSpec, environment: str | None) -> int:
    if isinstance(spec.par, int):
        return spec.par
    if environment in spec.par:
        return spec.par[str(environment)]
    where = f"no entry for environment {environment!r}" if environment else "no environment"
    msg = (
        f"component {spec.name!r}: par {spec.par!r} is per environment and has {where}; "
        f"name one of {sorted(spec.par)} with --environment (-e)"
    )
    raise InvalidTopologyError(msg, component=spec.name)


def _subscribe(
    declarer: BoltDeclarer, bolt: str, source: str, stream: str, grouping: GroupingSpec
) -> None:
    kind = grouping.kind
    if kind == "fields":
        declarer.fields_grouping(source, Fields(*grouping.fields), stream)
    elif kind in ("shuffle", "global", "direct", "all", "none", "local_or_shuffle"):
        getattr(declarer, f"{kind}_grouping")(source, stream)
    else:
        msg = (
            f"bolt {bolt!r} subscribes to {source!r} stream {stream!r} with a JVM grouping "
            f"({grouping.java}): sparkstorm runs Python only; use a Python grouping, or "
            f"TopologyBuilder's custom_grouping with a Python choose_tasks"
        )
        raise InvalidTopologyError(msg, component=bolt, stream=stream)
