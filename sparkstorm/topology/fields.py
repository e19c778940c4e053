"""``Fields``: the ordered names of a stream's values (Storm's ``backtype.storm.tuple.Fields``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any


class Fields:
    """An immutable, ordered list of field names.

    Examples
    --------
    >>> Fields("word", "count").index("count")
    1
    >>> Fields(["word"]) == Fields("word")
    True

    .. versionadded:: 0.1.0
    """

    __slots__ = ("_index", "_names")

    def __init__(self, *names: str | Iterable[str]) -> None:
        if len(names) == 1 and not isinstance(names[0], str):
            names = tuple(names[0])
        flat = tuple(names)
        for name in flat:
            if not isinstance(name, str):
                msg = f"field names must be strings, got {name!r} in {list(flat)!r}"
                raise TypeError(msg)
        if len(set(flat)) != len(flat):
            msg = f"duplicate field name in {list(flat)!r}"
            raise ValueError(msg)
        self._names: tuple[str, ...] = flat  # type: ignore[assignment]
        self._index = {name: i for i, name in enumerate(flat)}

    def index(self, name: str) -> int:
        """Position of ``name``; raises ``KeyError`` naming the declared fields."""
        try:
            return self._index[name]
        except KeyError:
            msg = f"field {name!r} is not one of {list(self._names)}"
            raise KeyError(msg) from None

    def contains(self, name: str) -> bool:
        """Whether ``name`` is one of the fields."""
        return name in self._index

    def select(self, selector: Fields, values: Sequence[Any]) -> list[Any]:
        """The values of the fields named by ``selector``, in the selector's order."""
        return [values[self._index[name]] for name in selector._names]

    def to_list(self) -> list[str]:
        """The names as a list."""
        return list(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __getitem__(self, i: int) -> str:
        return self._names[i]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fields) and other._names == self._names

    def __hash__(self) -> int:
        return hash(self._names)

    def __repr__(self) -> str:
        return f"Fields({', '.join(map(repr, self._names))})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Fields, self._names)
