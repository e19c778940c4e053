"""A record batch's rows go where the tuples of their values would, under every grouping."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sparkstorm import Fields
from sparkstorm.topology.column_hashing import crc32_strings
from sparkstorm.topology.column_routes import batch_targets
from sparkstorm.topology.declarers import StreamInfo
from sparkstorm.topology.groupings import StreamRoute, _two_choices


def route(kind: str, tasks: list[int], key: Fields | None = None) -> StreamRoute:
    made = StreamRoute("src", "default", StreamInfo(Fields("word", "n"), False))
    made.add_subscriber(kind, tasks, key)
    return made


BATCH = pa.record_batch(
    [pa.array(["a", "b", "", "été", "a", "x" * 50, "日本"]), pa.array([1, 2, 3, -4, 5, 6, 70])],
    names=["word", "n"],
)
ROWS = [list(r.values()) for r in BATCH.to_pylist()]


def per_row(shares, n):
    got: dict[int, list[int]] = {i: [] for i in range(n)}
    for task, rows in shares:
        for row in range(n) if rows is None else rows.tolist():
            got[row].append(task)
    return got


@pytest.mark.parametrize(
    ("kind", "key"),
    [
        ("fields", Fields("word")),
        ("fields", Fields("n")),
        ("fields", Fields("word", "n")),
        ("all", None),
        ("global", None),
    ],
)
def test_every_row_gets_the_tasks_its_tuple_would(kind, key):
    made = route(kind, [3, 5, 8], key)
    counter = 41
    got = per_row(batch_targets(made, BATCH, counter, 7), len(ROWS))
    want = {i: made.targets(values, counter + i + 1) for i, values in enumerate(ROWS)}
    assert {i: sorted(t) for i, t in got.items()} == {i: sorted(t) for i, t in want.items()}


def test_a_partial_key_grouping_is_asked_row_by_row_in_order():
    made = StreamRoute("src", "default", StreamInfo(Fields("word", "n"), False))
    made.add_subscriber("partial_key", [3, 5, 8], Fields("word"))
    twin = _two_choices([3, 5, 8], [0])
    got = per_row(batch_targets(made, BATCH, 0, 0), len(ROWS))
    assert got == {i: twin(values, 0) for i, values in enumerate(ROWS)}


@pytest.mark.parametrize("tasks", [[3, 5, 8], list(range(20, 31))])
def test_a_fields_grouping_finds_each_tasks_rows_by_passes_or_by_a_sort(tasks):
    column = pa.array([f"w{i % 37}" for i in range(500)])
    made = StreamRoute("src", "default", StreamInfo(Fields("word"), False))
    made.add_subscriber("fields", tasks, Fields("word"))
    got = per_row(batch_targets(made, pa.record_batch([column], ["word"]), 0, 0), 500)
    want = {i: made.targets([word], 0) for i, word in enumerate(column.to_pylist())}
    assert got == want


@pytest.mark.parametrize("kind", ["shuffle", "none", "local_or_shuffle"])
def test_a_shuffle_deals_whole_batches_in_turn(kind):
    made = route(kind, [3, 5, 8])
    dealt = [batch_targets(made, BATCH, 0, batches) for batches in range(7)]
    assert dealt == [[(task, None)] for task in [3, 5, 8, 3, 5, 8, 3]]


def test_crc32_over_a_column_is_zlibs():
    import zlib

    words = pa.array(["", "a", "été", "x" * 300, "日本語"])
    assert crc32_strings(words).tolist() == [zlib.crc32(w.encode()) for w in words.to_pylist()]
