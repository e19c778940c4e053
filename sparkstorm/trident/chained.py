"""``chained_agg()`` ... ``chain_end()``: several aggregations over one batch, one result.

Storm's ``ChainedAggregatorDeclarer``: each aggregation is declared as on a stream
(``aggregate`` or ``partition_aggregate``, with its own input and output fields); at
``chain_end()`` they run together over each batch (or batch partition, or group), and
their tuples are joined into one: the cross product of what each emitted, its fields
the aggregations' output fields in order. Aggregations over the whole batch that are
all combiners are combined on each partition first, as one combiner is.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.fields import Fields
from sparkstorm.trident.declaring import aggregation_args, aggregator_kind, check_fields
from sparkstorm.trident.nodes import aggregate
from sparkstorm.trident.operations import (
    BaseAggregator,
    BaseFunction,
    CombinerAggregator,
    Operation,
)
from sparkstorm.trident.tuple import TridentCollector, TridentTuple, tuple_class

if TYPE_CHECKING:
    from sparkstorm.trident.stream import Stream

CHAINED = "$chained$"
"""The field that carries the chained combiners' partial results between two steps."""


@dataclass
class _Spec:
    agg: Operation
    in_fields: Fields
    out_fields: Fields
    indexes: list[int]


class _Projected:
    """Each aggregation's input tuple, cut from the tuple the chain gets."""

    def __init__(self, specs: list[_Spec]) -> None:
        self.specs = specs
        self.classes = [tuple_class(spec.in_fields) for spec in specs]

    def __getstate__(self) -> dict[str, Any]:
        return {"specs": self.specs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["specs"])  # type: ignore[misc]

    def cut(self, i: int, tup: TridentTuple) -> TridentTuple:
        return self.classes[i]([tup[j] for j in self.specs[i].indexes])


class ChainedAggregator(BaseAggregator[list[Any]], _Projected):
    """Runs every aggregation of a chain over the same tuples; emits the cross product."""

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        """Prepare each aggregation."""
        for spec in self.specs:
            spec.agg.prepare(conf, context)

    def cleanup(self) -> None:
        """Clean up each aggregation."""
        for spec in self.specs:
            spec.agg.cleanup()

    def init(self, batch_id: Any, collector: TridentCollector) -> list[Any]:
        """Each aggregation's tuples so far."""
        return [[] for _ in self.specs]

    def aggregate(self, state: list[Any], tup: TridentTuple, collector: TridentCollector) -> None:
        """Keep the tuple for each aggregation, cut to its input fields."""
        for i, kept in enumerate(state):
            kept.append(self.cut(i, tup))

    def complete(self, state: list[Any], collector: TridentCollector) -> None:
        """Run each aggregation; emit every combination of their tuples."""
        results = [
            aggregate(spec.agg, None, kept, len(spec.out_fields), _NODE)
            for spec, kept in zip(self.specs, state, strict=True)
        ]
        for combination in itertools.product(*results):
            collector.emit([value for values in combination for value in values])


class ChainedCombiner(CombinerAggregator[list[Any]], _Projected):
    """Every combiner of a chain at once: a partial result is the list of theirs."""

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        """Prepare each combiner."""
        for spec in self.specs:
            spec.agg.prepare(conf, context)

    def cleanup(self) -> None:
        """Clean up each combiner."""
        for spec in self.specs:
            spec.agg.cleanup()

    def init(self, tup: TridentTuple) -> list[Any]:
        """Each combiner's value of one tuple."""
        return [spec.agg.init(self.cut(i, tup)) for i, spec in enumerate(self.specs)]  # type: ignore[attr-defined]

    def combine(self, a: list[Any], b: list[Any]) -> list[Any]:
        """Each combiner's combination."""
        return [spec.agg.combine(x, y) for spec, x, y in zip(self.specs, a, b, strict=True)]  # type: ignore[attr-defined]

    def zero(self) -> list[Any]:
        """Each combiner's zero."""
        return [spec.agg.zero() for spec in self.specs]  # type: ignore[attr-defined]


class _Spread(BaseFunction):
    """The chained combiners' results, as the chain's output fields."""

    def execute(self, tup: TridentTuple, collector: TridentCollector) -> None:
        collector.emit(list(tup[0]))


class _Label:
    label = "chained_agg"


_NODE: Any = _Label()
"""What an aggregation's wrong width is reported against."""


class ChainedAggregatorDeclarer:
    """Declares the aggregations of a chain (Storm's ``ChainedAggregatorDeclarer``).

    .. versionadded:: 0.4.0
    """

    def __init__(self, stream: Stream, group: Fields) -> None:
        self.stream, self.group = stream, group
        self.specs: list[_Spec] = []
        self.kind: str | None = None

    def aggregate(self, *args: Any) -> ChainedAggregatorDeclarer:
        """``aggregate([in_fields,] aggregator, out_fields)`` over each batch (or group)."""
        return self._add("aggregate", args)

    def partition_aggregate(self, *args: Any) -> ChainedAggregatorDeclarer:
        """``partition_aggregate([in_fields,] aggregator, out_fields)`` per batch partition."""
        return self._add("partition_aggregate", args)

    def _add(self, kind: str, args: tuple[Any, ...]) -> ChainedAggregatorDeclarer:
        if self.kind is not None and self.kind != kind:
            msg = (
                f"chained_agg: a {kind} after a {self.kind}: a chain aggregates each batch "
                f"(aggregate) or each partition (partition_aggregate), not both"
            )
            raise InvalidTopologyError(msg)
        self.kind = kind
        in_fields, agg, out = aggregation_args(args, f"chained_agg().{kind}")
        aggregator_kind(agg, f"chained_agg().{kind}")
        node = self.stream.node
        fields = node.fields if in_fields is None else check_fields(node, in_fields, kind)
        indexes = [node.fields.index(name) for name in fields]
        self.specs.append(_Spec(agg, fields, out, indexes))
        return self

    def chain_end(self) -> Stream:
        """The chain's stream: the group fields, then every aggregation's output fields."""
        if not self.specs:
            msg = "chain_end: the chain declares no aggregation"
            raise InvalidTopologyError(msg)
        out = Fields([name for spec in self.specs for name in spec.out_fields])
        if len(set(out)) != len(out):
            msg = f"chained_agg: the aggregations' output fields repeat a name: {out.to_list()}"
            raise InvalidTopologyError(msg)
        stream, group = self.stream, self.group
        if self.kind == "partition_aggregate":
            return stream._partition_aggregate(group, None, ChainedAggregator(self.specs), out)
        if all(isinstance(spec.agg, CombinerAggregator) for spec in self.specs):
            combined = stream._aggregate(
                group, None, ChainedCombiner(self.specs), Fields(CHAINED), "chained_agg"
            )
            spread = combined.each(Fields(CHAINED), _Spread(), out)
            return spread.project(Fields([*group, *out]))
        return stream._aggregate(group, None, ChainedAggregator(self.specs), out, "chained_agg")
