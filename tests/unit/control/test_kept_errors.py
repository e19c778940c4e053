"""A run keeps its first errors and its latest ones, and counts what it let go."""

from __future__ import annotations

from sparkstorm.control.kept_errors import FIRST, KeptErrors
from sparkstorm.reliability.base_collector import ReportedError


def error(i: int, count: int = 1) -> ReportedError:
    return ReportedError("bolt", 3, float(i), f"ValueError: input {i}", count=count)


def test_the_first_and_the_latest_are_kept_and_the_rest_counted():
    kept = KeptErrors(limit=1000)
    for i in range(20_000):
        kept.append(error(i, count=2))
    assert len(kept) <= 1250  # bounded as it goes
    messages = [e.message for e in kept]
    assert messages[:FIRST] == [f"ValueError: input {i}" for i in range(FIRST)]
    assert messages[-1] == "ValueError: input 19999"
    assert kept.dropped == 2 * (20_000 - len(kept))  # occurrences, not records
    assert kept.trims > 0


def test_below_the_limit_it_is_a_plain_list():
    kept = KeptErrors(limit=10)
    for i in range(10):
        kept.append(error(i))
    assert kept == [error(i) for i in range(10)]
    assert (kept.dropped, kept.trims) == (0, 0)
