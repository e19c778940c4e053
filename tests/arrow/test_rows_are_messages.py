"""Rows are messages: an Arrow spout's rows, split by an Arrow bolt, counted by a tuple bolt.

Each sentence a spout emits in a record batch is one message; every word of it, anchored
to its row, joins its tree. A poison row failed in the Arrow bolt fails its message
alone, which the spout replays; every other sentence is acked once, and every word of
an acked sentence is counted.
"""

from __future__ import annotations

from collections import Counter

import pytest

from sparkstorm import Fields, TopologyBuilder
from tests.arrow.components import CountWords, SentenceBatches, SplitColumns, counted, noted

SENTENCES = [f"the cow {i} jumped" if i != 7 else "a poison pill" for i in range(40)]


def topology(folder: str, times: int):
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceBatches(SENTENCES, 16, folder))
    builder.set_bolt("split", SplitColumns(folder, times), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", CountWords(folder), 2).fields_grouping("split", Fields("word"))
    return builder.create_topology()


@pytest.mark.parametrize("engine", ["local", "spark", "continuous"])
def test_a_poison_row_fails_its_message_alone_and_the_rest_are_acked_once(
    engine, cluster_factory, tmp_path
):
    folder = str(tmp_path)
    cluster = cluster_factory(engine)
    cluster.submit_topology("rows", {}, topology(folder, times=1))
    cluster.wait_until_idle()
    assert noted(folder, "failed") == ["7 explicit"]  # the poison row, alone
    acked = Counter(int(line) for line in noted(folder, "acked"))
    assert acked == Counter(range(40))  # each sentence once: the poison after its replay
    words = Counter(w for s in SENTENCES for w in s.split())
    assert counted(folder) == words  # the failed attempt emitted nothing of the poison row
