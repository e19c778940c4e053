"""``TridentTuple`` and ``TridentCollector``: what an operation gets and emits through.

An operation sees the fields it named as its input, in that order: ``tup[0]`` is the
first of them, ``tup["word"]`` the field by name. What a function emits is appended to
its input tuple's fields downstream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkstorm.topology.fields import Fields


class TridentTuple(list[Any]):
    """One tuple of a batch, as an operation sees it: its values, by position or by name.

    Examples
    --------
    >>> tup = TridentTuple(Fields("word", "n"), ["a", 2])
    >>> tup[0], tup["n"], tup.get_value_by_field("word")
    ('a', 2, 'a')

    .. versionadded:: 0.3.0
    """

    __slots__ = ("fields",)

    def __init__(self, fields: Fields, values: Sequence[Any]) -> None:
        super().__init__(values)
        self.fields = fields

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return list.__getitem__(self, self.fields.index(key))
        return list.__getitem__(self, key)

    def get_value(self, i: int) -> Any:
        """The ``i``-th value (Storm's ``getValue``)."""
        return list.__getitem__(self, i)

    def get_value_by_field(self, name: str) -> Any:
        """The value of field ``name``."""
        return list.__getitem__(self, self.fields.index(name))

    get_string = get_integer = get_long = get_double = get_boolean = get_value
    get_values = list.copy

    def get_fields(self) -> Fields:
        """The names of the values, in order."""
        return self.fields

    def size(self) -> int:
        """How many values (Storm's ``size``)."""
        return len(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (TridentTuple, (self.fields, list(self)))


class TridentCollector:
    """Collects what an operation emits for the tuple at hand (Storm's ``TridentCollector``).

    .. versionadded:: 0.3.0
    """

    __slots__ = ("emitted", "errors")

    def __init__(self) -> None:
        self.emitted: list[list[Any]] = []
        self.errors: list[BaseException] = []

    def emit(self, values: Sequence[Any]) -> None:
        """Emit ``values`` (the operation's output fields, in order)."""
        self.emitted.append(list(values))

    def report_error(self, error: BaseException) -> None:
        """Report ``error`` without failing the batch (as a bolt's ``report_error``)."""
        self.errors.append(error)

    def take(self) -> list[list[Any]]:
        """What was emitted since the last call."""
        emitted, self.emitted = self.emitted, []
        return emitted
