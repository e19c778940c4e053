"""The least or greatest tuple of each batch partition: ``min_by``, ``max_by``, ``min``, ``max``.

Storm's ``Min``, ``Max``, ``MinWithComparator`` and ``MaxWithComparator``: run as a
partition aggregate, they keep one tuple per batch partition, as Storm's do. A
comparator is Storm's ``Comparator``: a function ``(a, b) -> int`` (negative, zero or
positive, as ``a`` is less than, equal to or greater than ``b``), or an object with a
``compare(a, b)`` method. Without one, values compare with ``<``. Of equal tuples, the
first is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkstorm.trident.operations import BaseAggregator
from sparkstorm.trident.tuple import TridentCollector, TridentTuple

Comparator = Callable[[Any, Any], int] | Any
"""A function ``(a, b) -> int``, or an object with ``compare(a, b) -> int``."""


def _compare(comparator: Comparator | None) -> Callable[[Any, Any], int]:
    if comparator is None:
        return lambda a, b: (a > b) - (a < b)
    method = getattr(comparator, "compare", None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    if callable(comparator):
        return comparator
    msg = (
        f"{comparator!r} is no comparator: give a function (a, b) -> int, or an object "
        "with a compare(a, b) method"
    )
    raise TypeError(msg)


class _Extreme(BaseAggregator[list[Any]]):
    """Keeps the tuple whose value (a field, or the whole tuple) compares least or greatest."""

    sign = 1
    """1: keep the least; -1: the greatest."""

    def __init__(self, field: str | None = None, comparator: Comparator | None = None) -> None:
        self.field = field
        self.comparator = comparator
        self.compare = _compare(comparator)

    def __getstate__(self) -> dict[str, Any]:
        return {"field": self.field, "comparator": self.comparator}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["field"], state["comparator"])  # type: ignore[misc]

    def _value(self, tup: TridentTuple) -> Any:
        return tup if self.field is None else tup.get(self.field)

    def init(self, batch_id: Any, collector: TridentCollector) -> list[Any]:
        """No tuple yet."""
        return []

    def aggregate(self, state: list[Any], tup: TridentTuple, collector: TridentCollector) -> None:
        """Keep ``tup`` if it compares beyond the one kept."""
        if not state or self.sign * self.compare(self._value(tup), self._value(state[0])) < 0:
            state[:] = [tup]

    def complete(self, state: list[Any], collector: TridentCollector) -> None:
        """Emit the one kept, if any."""
        for tup in state:
            collector.emit(list(tup))


class Min(_Extreme):
    """The tuple whose ``field`` is least (Storm's ``Min``).

    .. versionadded:: 0.4.0
    """


class Max(_Extreme):
    """The tuple whose ``field`` is greatest (Storm's ``Max``).

    .. versionadded:: 0.4.0
    """

    sign = -1


class MinWithComparator(Min):
    """The least tuple by ``comparator``: of ``field``'s values, or of whole tuples.

    .. versionadded:: 0.4.0
    """

    def __init__(self, *args: Any) -> None:
        field, comparator = (None, args[0]) if len(args) == 1 else args
        super().__init__(field, comparator)


class MaxWithComparator(Max):
    """The greatest tuple by ``comparator``: of ``field``'s values, or of whole tuples.

    .. versionadded:: 0.4.0
    """

    def __init__(self, *args: Any) -> None:
        field, comparator = (None, args[0]) if len(args) == 1 else args
        super().__init__(field, comparator)
