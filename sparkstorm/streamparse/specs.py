"""streamparse's topology DSL: ``Topology`` subclasses of ``Component.spec(...)`` attributes.

The same classes and checks as ``streamparse.dsl`` (``Stream``, ``Grouping``,
``ComponentSpec``, the ``Topology`` metaclass that names each spec after its attribute),
without Thrift: a spec keeps what :mod:`sparkstorm.streamparse.convert` needs to build a
sparkstorm topology. JVM and shell components are accepted here, as streamparse accepts
them, and refused with one error naming the component when the topology is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT = "default"


class Stream:
    """An output stream: ``Stream(fields, name="default", direct=False)``."""

    def __init__(
        self,
        fields: list[str] | tuple[str, ...] | None = None,
        name: str = DEFAULT,
        direct: bool = False,
    ) -> None:
        if fields is None:
            fields = []
        if not isinstance(fields, list | tuple):
            msg = f"Stream fields must be a list, tuple, or None; given: {fields!r}"
            raise TypeError(msg)
        for one in fields:
            if not isinstance(one, str):
                msg = f"All field names must be strings; given: {one!r}"
                raise TypeError(msg)
        if not isinstance(name, str):
            msg = f"Stream name must be a string; given: {name!r}"
            raise TypeError(msg)
        if not isinstance(direct, bool):
            msg = f'"direct" must be either True or False; given: {direct!r}'
            raise TypeError(msg)
        self.fields, self.name, self.direct = list(fields), name, direct

    def __repr__(self) -> str:
        return f"Stream({self.fields!r}, name={self.name!r}, direct={self.direct!r})"


@dataclass(frozen=True)
class GroupingSpec:
    """One grouping: ``kind`` (shuffle, fields, global, ...) and, for fields, the fields.

    ``java`` holds a JVM custom grouping's class name or serialized bytes, which
    sparkstorm cannot run.
    """

    kind: str
    fields: tuple[str, ...] = ()
    java: Any = None

    def __repr__(self) -> str:
        return f"fields({list(self.fields)!r})" if self.kind == "fields" else self.kind.upper()


class Grouping:
    """How a stream's tuples are spread over a bolt's tasks (streamparse's ``Grouping``)."""

    __slots__ = ()

    SHUFFLE = GroupingSpec("shuffle")
    GLOBAL = GroupingSpec("global")
    DIRECT = GroupingSpec("direct")
    ALL = GroupingSpec("all")
    NONE = GroupingSpec("none")
    LOCAL_OR_SHUFFLE = GroupingSpec("local_or_shuffle")

    @classmethod
    def fields(cls, *fields: str | list[str]) -> GroupingSpec:
        """Tuples with equal values of ``fields`` go to the same task."""
        names = fields[0] if len(fields) == 1 and isinstance(fields[0], list) else list(fields)
        if not names:
            msg = "List cannot be empty for fields grouping"
            raise ValueError(msg)
        return GroupingSpec("fields", tuple(str(n) for n in names))

    @classmethod
    def custom_object(cls, java_class_name: str, arg_list: list[Any]) -> GroupingSpec:
        """A JVM grouping class: accepted here, refused when the topology is built."""
        return GroupingSpec("custom_object", java=java_class_name)

    @classmethod
    def custom_serialized(cls, java_serialized: bytes) -> GroupingSpec:
        """A serialized JVM grouping: accepted here, refused when the topology is built."""
        return GroupingSpec("custom_serialized", java="serialized Java bytes")


@dataclass(frozen=True)
class GlobalStreamId:
    """A component's stream, as a bolt's input (Storm's Thrift ``GlobalStreamId``)."""

    componentId: Any
    streamId: str = DEFAULT


class ComponentSpec:
    """A component in a ``Topology``: its class, name, inputs, parallelism and config.

    Made by ``Spout.spec(...)`` / ``Bolt.spec(...)``; the ``Topology`` class names it
    after its attribute unless ``name`` is given.
    """

    def __init__(
        self,
        component_cls: type,
        name: str | None = None,
        inputs: Any = None,
        par: int | dict[str, int] | None = None,
        config: dict[str, Any] | None = None,
        outputs: list[Any] | None = None,
    ) -> None:
        self.component_cls = component_cls
        self.name = name
        self.par = _checked_par(component_cls, par)
        config = component_cls.config if config is None else config  # type: ignore[attr-defined]
        if config is not None and not isinstance(config, dict):
            msg = f"Config must either be a dict or None.  Given: {config!r}"
            raise TypeError(msg)
        self.config: dict[str, Any] = dict(config or {})
        outputs = component_cls.outputs if outputs is None else outputs  # type: ignore[attr-defined]
        self.outputs = streams_of(outputs)
        self.inputs = self._inputs(inputs)

    def _inputs(self, inputs: Any) -> dict[GlobalStreamId, GroupingSpec]:
        if isinstance(inputs, dict):
            found: dict[GlobalStreamId, GroupingSpec] = {}
            for key, grouping in inputs.items():
                if isinstance(key, ComponentSpec):
                    key = key[DEFAULT]
                if not isinstance(key, GlobalStreamId) or not isinstance(grouping, GroupingSpec):
                    msg = (
                        "If inputs is a dict, it is expected to map from GlobalStreamId or "
                        "ComponentSpec objects to Grouping objects.  Given key: "
                        f"{key!r}; Given value: {grouping!r}"
                    )
                    raise TypeError(msg)
                found[key] = grouping
            return found
        if isinstance(inputs, ComponentSpec):
            inputs = [inputs]
        if inputs is None:
            return {}
        if not isinstance(inputs, list | tuple):
            msg = f"Inputs must either be a list, dict, or None.  Given: {inputs!r}"
            raise TypeError(msg)
        found = {}
        for one in inputs:
            if isinstance(one, ComponentSpec):
                default = one.outputs.get(DEFAULT)
                grouping = Grouping.DIRECT if default and default.direct else Grouping.SHUFFLE
                found[one[DEFAULT]] = grouping
            elif isinstance(one, GlobalStreamId):
                found[one] = Grouping.SHUFFLE
            else:
                msg = f"Inputs must be ComponentSpec or GlobalStreamId objects.  Given: {one!r}"
                raise TypeError(msg)
        return found

    def __getitem__(self, stream: str) -> GlobalStreamId:
        """The component's ``stream``, to subscribe to: ``spec["errors"]``."""
        if stream not in self.outputs:
            msg = (
                f"Invalid stream for {self.name}: {stream!r}. Valid streams are: "
                f"{list(self.outputs)}"
            )
            raise KeyError(msg)
        return GlobalStreamId(self.name or self, stream)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.component_cls.__name__}, name={self.name!r})"


class JvmSpec(ComponentSpec):
    """A ``JavaSpout``/``JavaBolt``/``ShellSpout``/``ShellBolt``: kept to be refused."""

    def __init__(self, component_cls: type, kind: str, detail: str, **kwargs: Any) -> None:
        super().__init__(component_cls, **kwargs)
        self.kind, self.detail = kind, detail


def _checked_par(component_cls: type, par: Any) -> int | dict[str, int]:
    if par is None:
        par = getattr(component_cls, "par", 1)
    if isinstance(par, dict):
        for env, hint in par.items():
            if not (isinstance(env, str) and isinstance(hint, int)):
                msg = (
                    "If par is a dict, it must map from environment names to integers "
                    "specifying the parallelism hint for the component.\n"
                    f"Given stage: {env!r}\nGiven parallelism hint: {hint!r}"
                )
                raise TypeError(msg)
            if hint < 1:
                msg = (
                    f"Parallelism hint for stage {env} must be an integer greater than 0. "
                    f"Given: {hint}"
                )
                raise ValueError(msg)
        return par
    if not isinstance(par, int) or isinstance(par, bool):
        msg = f"Parallelism hint must be an integer greater than 0. Given: {par!r}"
        raise TypeError(msg)
    if par < 1:
        msg = f"Parallelism hint must be an integer greater than 0. Given: {par}"
        raise ValueError(msg)
    return par


def streams_of(outputs: Any) -> dict[str, Stream]:
    """A component's ``outputs`` (field names, or ``Stream`` objects) by stream name."""
    if outputs is None:
        return {}
    if not isinstance(outputs, list | tuple):
        msg = f"Outputs must either be a list of strings or a list of Streams.  Given: {outputs!r}"
        raise TypeError(msg)
    streams: dict[str, Stream] = {}
    for one in outputs:
        if isinstance(one, Stream):
            streams[one.name] = one
        elif isinstance(one, str):
            streams.setdefault(DEFAULT, Stream([])).fields.append(one)
        else:
            msg = (
                "Outputs must either be a list of strings or a list of Streams.  Invalid "
                f"entry: {one!r}"
            )
            raise TypeError(msg)
    return streams


class TopologyType(type):
    """Collects a ``Topology`` class's specs, named after their attributes, and checks them."""

    specs: list[ComponentSpec]
    config: dict[str, Any]

    def __new__(mcs, classname: str, bases: tuple[type, ...], class_dict: dict[str, Any]) -> Any:
        """Name the class's specs and check them, as streamparse does at import."""
        specs: dict[str, ComponentSpec] = {}
        for attr, spec in class_dict.items():
            if isinstance(spec, ComponentSpec):
                if spec.name is None:
                    spec.name = attr
                if spec.name in specs:
                    msg = f"Duplicate component name: {spec.name}"
                    raise ValueError(msg)
                specs[spec.name] = spec
            elif _is_component_class_instance(spec):
                msg = (
                    "Topology classes should have ComponentSpec attributes.  Did you forget "
                    f"to call the spec class method for your component?  Given: {spec!r}"
                )
                raise TypeError(msg)
        has_spout = False
        for spec in specs.values():
            if spec.component_cls.is_spout_class():  # type: ignore[attr-defined]
                has_spout = True
                if not spec.outputs:
                    msg = (
                        f'{spec.component_cls.__name__} "{spec.name}" requires at least one '
                        "output, because it is a Spout"
                    )
                    raise ValueError(msg)
            elif not spec.inputs:
                msg = (
                    f'{spec.component_cls.__name__} "{spec.name}" requires at least one '
                    "input, because it is a Bolt."
                )
                raise ValueError(msg)
            _name_inputs(spec, specs)
        if classname != "Topology" and not has_spout:
            msg = "A Topology requires at least one Spout"
            raise ValueError(msg)
        config = class_dict.setdefault("config", {})
        if not isinstance(config, dict):
            msg = f"Topology config must be a dictionary. Given: {config!r}"
            raise TypeError(msg)
        class_dict["specs"] = list(specs.values())
        return type.__new__(mcs, classname, bases, class_dict)


def _is_component_class_instance(value: Any) -> bool:
    return callable(getattr(type(value), "is_spout_class", None))


def _name_inputs(spec: ComponentSpec, specs: dict[str, ComponentSpec]) -> None:
    """Replace specs in ``spec.inputs`` by their names; check fields groupings' fields."""
    named: dict[GlobalStreamId, GroupingSpec] = {}
    for source, grouping in spec.inputs.items():
        component = source.componentId
        if isinstance(component, ComponentSpec):
            component = component.name
        named[GlobalStreamId(component, source.streamId)] = grouping
        upstream = specs.get(component)
        if upstream is None or grouping.kind != "fields":
            continue  # an unknown component is named when the topology is built
        stream = upstream.outputs.get(source.streamId)
        valid = set(stream.fields) if stream else set()
        for one in grouping.fields:
            if one not in valid:
                msg = (
                    f"Field {one!r} specified in grouping is not a valid output field for "
                    f"the {upstream.name!r} {source.streamId!r} stream."
                )
                raise ValueError(msg)
    spec.inputs = named


class Topology(metaclass=TopologyType):
    """A streamparse topology: subclass it with ``Component.spec(...)`` attributes.

    ``config`` (a dict) is the topology's Storm configuration.
    """
