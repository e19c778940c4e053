"""What declaring a Trident operation checks: its fields, and its aggregator's kind.

Declaring an operation checks its fields at once: a field an operation names that its
input lacks raises :class:`~sparkstorm.InvalidTopologyError` naming the field and
listing the fields there are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.fields import Fields
from sparkstorm.trident.nodes import FIELDS, Node, Partitioning
from sparkstorm.trident.operations import (
    BaseAggregator,
    CombinerAggregator,
    Operation,
    ReducerAggregator,
)


def as_fields(value: Fields | Sequence[str] | str) -> Fields:
    """``value`` as :class:`~sparkstorm.Fields` (a name, a list of names, or Fields)."""
    if isinstance(value, Fields):
        return value
    return Fields(value) if isinstance(value, str) else Fields(list(value))


def check_fields(stream: Node, names: Fields, what: str) -> Fields:
    """``names``, each checked to be a field of ``stream`` (else the error naming it)."""
    for name in names:
        if name not in stream.fields:
            msg = (
                f"{what}: field {name!r} is not in its input stream, whose fields are "
                f"{stream.fields.to_list()}"
            )
            raise InvalidTopologyError(msg, field=name)
    return names


def check_new_fields(stream: Node, names: Fields, what: str) -> Fields:
    """``names``, each checked not to be a field of ``stream`` already."""
    for name in names:
        if name in stream.fields:
            msg = (
                f"{what}: output field {name!r} is already in its input stream "
                f"{stream.fields.to_list()}: name it differently, or project it away first"
            )
            raise InvalidTopologyError(msg, field=name)
    return names


def partitioning_by(parent: Node, group: Fields, ungrouped: str) -> Partitioning:
    """Rows of a group to one partition; ungrouped, to the one ``ungrouped`` says."""
    if group:
        return Partitioning(FIELDS, tuple(parent.fields.index(n) for n in group))
    return Partitioning(ungrouped)


def aggregation_args(args: tuple[Any, ...], what: str) -> tuple[Fields | None, Operation, Fields]:
    """``([in_fields,] aggregator, out_fields)``."""
    if len(args) == 2:
        return None, args[0], as_fields(args[1])
    if len(args) == 3:
        return as_fields(args[0]), args[1], as_fields(args[2])
    msg = f"{what} takes ([in_fields,] aggregator, out_fields), got {len(args)} arguments"
    raise TypeError(msg)


def aggregator_kind(agg: Operation, what: str) -> str:
    """``combiner``, ``reducer`` or ``aggregator``; a TypeError for anything else."""
    for cls, kind in (
        (CombinerAggregator, "combiner"),
        (ReducerAggregator, "reducer"),
        (BaseAggregator, "aggregator"),
    ):
        if isinstance(agg, cls):
            return kind
    msg = (
        f"{what}: {type(agg).__name__} is not an aggregator: subclass CombinerAggregator, "
        f"ReducerAggregator or BaseAggregator"
    )
    raise TypeError(msg)
