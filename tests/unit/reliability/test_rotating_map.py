import pytest

from sparkstorm.reliability.rotating_map import RotatingMap


def test_needs_two_buckets():
    with pytest.raises(ValueError, match="at least 2 buckets"):
        RotatingMap(1)


def test_entry_expires_after_num_buckets_rotations():
    expired = []
    m = RotatingMap(3, lambda k, v: expired.append((k, v)))
    m.put("a", 1)
    m.rotate()
    m.rotate()
    assert m.get("a") == 1 and expired == []
    assert m.rotate() == {"a": 1}
    assert expired == [("a", 1)] and "a" not in m and len(m) == 0


def test_put_moves_key_to_newest_bucket_and_refreshes_expiry():
    m = RotatingMap(2)
    m.put("a", 1)
    m.rotate()
    m.put("a", 2)  # refresh: survives the next rotation
    assert m.rotate() == {}
    assert m.get("a") == 2 and m.size() == 1


def test_get_does_not_refresh_and_remove_returns_value():
    m = RotatingMap(2)
    m.put("a", 1)
    m.rotate()
    assert m.get("a") == 1
    assert m.rotate() == {"a": 1}
    m.put("b", 5)
    assert m.remove("b") == 5 and m.remove("b") is None and not m.contains_key("b")


def test_items_lists_oldest_first():
    m = RotatingMap(3)
    m.put("old", 1)
    m.rotate()
    m.put("new", 2)
    assert m.items() == [("old", 1), ("new", 2)]
