from sparkstorm.reliability import ids
from sparkstorm.reliability.ids import id_source


def test_same_seed_superstep_task_gives_same_ids():
    a, b = id_source(1, 5, 3), id_source(1, 5, 3)
    assert [a() for _ in range(100)] == [b() for _ in range(100)]


def test_ids_differ_by_seed_superstep_and_task():
    first = {
        id_source(s, ss, t)() for s in (0, 1) for ss in (0, 1, 2**32) for t in (1, 2, 2**32 + 1)
    }
    assert len(first) == 18


def test_ids_are_64_bit():
    ids = id_source(0, 0, 1)
    values = [ids() for _ in range(1000)]
    assert all(0 <= v < 2**64 for v in values)
    assert max(values) > 2**63  # the high bit is used


def test_ids_drawn_in_pieces_are_the_ids_of_one_draw(monkeypatch):
    """A draw's bit count is a C int: more than 2**25 ids at once come in pieces, the same."""
    whole = ids.ids_of(ids.id_source(1, 2, 3), 1000)
    monkeypatch.setattr(ids, "IDS_PER_DRAW", 7)
    assert (ids.ids_of(ids.id_source(1, 2, 3), 1000) == whole).all()
