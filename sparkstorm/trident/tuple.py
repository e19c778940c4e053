"""``TridentTuple`` and ``TridentCollector``: what an operation gets and emits through.

An operation sees the fields it named as its input, in that order: ``tup[0]`` is the
first of them, ``tup["word"]`` the field by name. What a function emits is appended to
its input tuple's fields downstream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from sparkstorm.topology.fields import Fields


class TridentTuple(list[Any]):
    """One tuple of a batch, as an operation sees it: its values, by position or by name.

    A list (``tup[0]`` reads at C speed); the names are its class's :attr:`fields`, one
    class per projection (see :func:`tuple_class`).

    Examples
    --------
    >>> Pair = tuple_class(Fields("word", "n"))
    >>> tup = Pair(["a", 2])
    >>> tup[0], tup.get("n"), tup.get_value_by_field("word")
    ('a', 2, 'a')

    .. versionadded:: 0.3.0
    """

    __slots__ = ()
    fields: ClassVar[Fields] = Fields()

    def get(self, name: str) -> Any:
        """The value of field ``name`` (``KeyError`` naming the fields there are if absent)."""
        return self[self.fields.index(name)]

    get_value_by_field = get_string_by_field = get_integer_by_field = get

    def get_value(self, i: int) -> Any:
        """The ``i``-th value (Storm's ``getValue``)."""
        return self[i]

    get_string = get_integer = get_long = get_double = get_boolean = get_value

    def get_values(self) -> list[Any]:
        """The values, as a plain list."""
        return list(self)

    def get_fields(self) -> Fields:
        """The names of the values, in order."""
        return self.fields

    def size(self) -> int:
        """How many values (Storm's ``size``)."""
        return len(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.fields, list(self)))


_CLASSES: dict[Fields, type[TridentTuple]] = {}


def tuple_class(fields: Fields) -> type[TridentTuple]:
    """The :class:`TridentTuple` class whose tuples have ``fields`` (one per field list)."""
    cls = _CLASSES.get(fields)
    if cls is None:
        cls = _CLASSES[fields] = type(
            "TridentTuple", (TridentTuple,), {"__slots__": (), "fields": fields}
        )
    return cls


def _rebuild(fields: Fields, values: list[Any]) -> TridentTuple:
    return tuple_class(fields)(values)


class TridentCollector:
    """Collects what an operation emits for the tuple at hand (Storm's ``TridentCollector``).

    .. versionadded:: 0.3.0
    """

    __slots__ = ("batches", "emitted", "errors")

    def __init__(self) -> None:
        self.emitted: list[list[Any]] = []
        self.errors: list[BaseException] = []
        self.batches: list[Any] = []
        """Record batches a columnar spout emitted (``emit_batch``)."""

    def emit(self, values: Sequence[Any]) -> None:
        """Emit ``values`` (the operation's output fields, in order)."""
        self.emitted.append(list(values))

    def emit_batch(self, batch: Any) -> None:
        """Emit the rows of a ``pyarrow.RecordBatch`` of the output fields.

        A spout's columns: its batch partition stays columns, with no tuple a row.
        """
        self.batches.append(batch)

    def part(self) -> Any:
        """What was emitted, as a batch partition.

        The record batches as one, when only batches of one schema were emitted; else
        rows (the batches' first).
        """
        if not self.batches:
            return self.emitted
        import pyarrow as pa

        from sparkstorm.trident.columnar import as_rows

        batches = [b for b in self.batches if b.num_rows]
        if not self.emitted and len({b.schema for b in batches}) <= 1:
            if not batches:
                return []
            return batches[0] if len(batches) == 1 else pa.concat_batches(batches)
        return [row for batch in self.batches for row in as_rows(batch)] + self.emitted

    def report_error(self, error: BaseException) -> None:
        """Report ``error`` without failing the batch (as a bolt's ``report_error``)."""
        self.errors.append(error)

    def take(self) -> list[list[Any]]:
        """What was emitted since the last call."""
        emitted, self.emitted = self.emitted, []
        return emitted
