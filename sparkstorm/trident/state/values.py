"""The values a transactional or opaque map stores beside each key (Storm's own classes).

A transactional map keeps the txid of the batch that last wrote a value, so that a
replayed batch (same txid, same tuples) is not applied twice. An opaque map also keeps
the value from before that batch, so that a replayed batch whose tuples changed can be
applied again on top of the value it started from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class TransactionalValue(Generic[T]):
    """A value and the txid of the batch that wrote it.

    .. versionadded:: 0.3.0
    """

    txid: int | None
    val: T


@dataclass(frozen=True)
class OpaqueValue(Generic[T]):
    """A value, the txid of the batch that wrote it, and the value from before that batch.

    Examples
    --------
    >>> v = OpaqueValue(8, "v1", "v0")
    >>> v.get(9), v.get(8)
    ('v1', 'v0')
    >>> v.update(9, "v2")
    OpaqueValue(curr_txid=9, curr='v2', prev='v1')

    .. versionadded:: 0.3.0
    """

    curr_txid: int | None
    curr: T
    prev: T | None = None

    def get(self, batch_txid: int | None) -> T | None:
        """The value batch ``batch_txid`` starts from: ``prev`` if it is the batch that wrote."""
        if batch_txid is None or self._before(batch_txid):
            return self.curr
        if batch_txid == self.curr_txid:
            return self.prev
        raise self._behind(batch_txid)

    def update(self, batch_txid: int | None, new_val: T) -> OpaqueValue[T]:
        """The value after batch ``batch_txid`` wrote ``new_val`` (again, if it is a replay)."""
        prev: T | None
        if batch_txid is None or self._before(batch_txid):
            prev = self.curr
        elif batch_txid == self.curr_txid:
            prev = self.prev
        else:
            raise self._behind(batch_txid)
        return OpaqueValue(batch_txid, new_val, prev)

    def _before(self, batch_txid: int) -> bool:
        return self.curr_txid is None or self.curr_txid < batch_txid

    def _behind(self, batch_txid: int) -> RuntimeError:
        return RuntimeError(
            f"batch {batch_txid} is behind the state, which batch {self.curr_txid} already "
            f"wrote ({self!r}): the state was written by a later run or another topology"
        )


def as_key(key: Any) -> tuple[Any, ...]:
    """A map key (the list of the group fields' values) as a hashable tuple."""
    return tuple(key)
