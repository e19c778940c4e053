"""Captured values are bounded per (component, stream): the latest kept, the rest counted."""

from __future__ import annotations

from sparkstorm.control.captures import Captures


def test_the_latest_values_of_each_stream_are_kept_and_the_dropped_counted():
    captures = Captures(limit=100)
    captures.add(("count", "default", [i]) for i in range(1000))
    captures.add([("other", "s", ["x"])])
    assert len(captures[("count", "default")]) <= 125  # trimmed as it goes
    result = captures.trimmed()
    assert result[("count", "default")] == [[i] for i in range(900, 1000)]
    assert result[("other", "s")] == [["x"]]
    assert result.dropped == {("count", "default"): 900}


def test_below_the_limit_nothing_is_dropped():
    captures = Captures(limit=10)
    captures.add(("a", "default", [i]) for i in range(10))
    assert captures.trimmed() == {("a", "default"): [[i] for i in range(10)]}
    assert captures.dropped == {}
