"""Rows are messages: an Arrow spout's rows, split by an Arrow bolt, counted by a tuple bolt.

Each sentence a spout emits in a record batch is one message; every word of it, anchored
to its row, joins its tree. A poison row failed in the Arrow bolt fails its message
alone, which the spout replays; every other sentence is acked once, and every word of
an acked sentence is counted.
"""

from __future__ import annotations

from collections import Counter

import pytest

from sparkstorm import Bolt, Fields, TopologyBuilder
from tests.arrow.components import (
    CountWords,
    FailWord,
    Holds,
    SentenceBatches,
    SplitColumns,
    TaskOfWord,
    WordsAsColumns,
    counted,
    noted,
)

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
    spout = cluster.stats("rows")["sentences"]
    assert spout["replayed_acked"] == 1 and spout["failed_for_good"] == {}  # a healthy run
    words = Counter(w for s in SENTENCES for w in s.split())
    assert counted(folder) == words  # the failed attempt emitted nothing of the poison row


@pytest.mark.parametrize("engine", ["local", "spark", "continuous"])
def test_a_word_failed_downstream_fails_its_sentence_alone(engine, cluster_factory, tmp_path):
    """A plain bolt fed by the Arrow split fails one word's tuple: that sentence's message
    fails (its row's tree), and is replayed; every other sentence is acked once."""
    folder = str(tmp_path)
    sentences = [f"s{i} common" for i in range(30)]
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceBatches(sentences, 10, folder))
    builder.set_bolt("split", SplitColumns(folder), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", FailWord("s13", folder), 2).fields_grouping("split", Fields("word"))
    cluster = cluster_factory(engine)
    cluster.submit_topology("downstream", {}, builder.create_topology())
    cluster.wait_until_idle()
    assert noted(folder, "failed") == ["13 explicit"]
    assert Counter(int(line) for line in noted(folder, "acked")) == Counter(range(30))
    expected = Counter(w for s in sentences for w in s.split())
    expected["common"] += 1  # the failed attempt's other word was counted, then again
    assert counted(folder) == expected


def test_fields_grouping_sends_a_row_where_its_tuple_would_go(cluster_factory, tmp_path):
    """The same words, from an Arrow stream and from a tuple stream, reach the same tasks."""
    folder = str(tmp_path)
    words = [f"w{i}" for i in range(60)] + ["été", "", "日本"]
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceBatches([" ".join(words)], 1, folder))
    builder.set_bolt("columns", SplitColumns(folder), 1).shuffle_grouping("sentences")
    builder.set_bolt("tuples", _TupleSplit(), 1).shuffle_grouping("sentences")
    builder.set_bolt("where", TaskOfWord(folder), 4).fields_grouping(
        "columns", Fields("word")
    ).fields_grouping("tuples", Fields("word"))
    cluster = cluster_factory("local")
    cluster.submit_topology("where", {}, builder.create_topology())
    cluster.wait_until_idle()
    seen: dict[str, dict[str, str]] = {"columns": {}, "tuples": {}}
    for line in noted(folder, "tasks"):
        source, word, task = line.split(" ") if line.count(" ") == 2 else (*line.split(" ", 1), "")
        seen[source][word] = task
    assert seen["columns"] and seen["columns"] == seen["tuples"]


class _TupleSplit(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        for word in tup[0].split(" "):
            self.collector.emit([word], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


def test_an_arrow_bolt_fed_by_tuples_gets_them_as_batches(cluster_factory, tmp_path):
    from sparkstorm.testing import FeederSpout

    folder = str(tmp_path)
    feeder = FeederSpout(Fields("sentence"))
    builder = TopologyBuilder()
    builder.set_spout("feeder", feeder)
    builder.set_bolt("split", _TupleSplit(), 1).shuffle_grouping("feeder")
    builder.set_bolt("columns", WordsAsColumns(), 2).shuffle_grouping("split")
    builder.set_bolt("count", CountWords(folder), 2).fields_grouping("columns", Fields("word"))
    cluster = cluster_factory("local")
    cluster.submit_topology("mixed", {}, builder.create_topology())
    for i in range(5):
        feeder.feed([f"a b c{i}"], msg_id=i)
    cluster.wait_until_idle()
    assert sorted(feeder.acked) == [0, 1, 2, 3, 4] and feeder.failed == []
    assert counted(folder) == Counter({"a": 5, "b": 5, **{f"c{i}": 1 for i in range(5)}})


def test_rows_left_unsettled_time_out_each_as_its_message(cluster_factory, tmp_path):
    folder = str(tmp_path)
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceBatches([f"s{i}" for i in range(12)], 5, folder))
    builder.set_bolt("hold", Holds()).shuffle_grouping("sentences")
    cluster = cluster_factory("local")
    conf = {"topology.message.timeout.secs": 5, "topology.max.spout.pending": 5}
    cluster.submit_topology("timeouts", conf, builder.create_topology())
    cluster.wait_until_idle()
    assert noted(folder, "failed") == []
    assert cluster.stats("timeouts")["sentences"]["emitted"] == 5  # pending counts rows
    cluster.advance_time(11)
    reasons = [line.split(" ")[1] for line in noted(folder, "failed")]
    assert len(reasons) >= 5 and set(reasons) == {"timeout"}
    first = sorted(int(line.split(" ")[0]) for line in noted(folder, "failed"))[:5]
    assert first == [0, 1, 2, 3, 4]


class _DirectBatches(SentenceBatches):
    """Emits every batch to the last task of ``where``, on a direct stream."""

    def open(self, conf, context, collector):
        super().open(conf, context, collector)
        self.task = context.get_component_tasks("where")[-1]
        self.emit = collector.emit_batch_direct

    def next_batch(self):
        import pyarrow as pa

        ids = list(range(self.next, min(self.next + self.size, len(self.sentences))))
        self.next += len(ids)
        if ids:
            words = pa.array([self.sentences[i] for i in ids])
            self.emit(self.task, pa.record_batch([words], names=["word"]), ids, "direct")

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"), "direct", direct=True)


def test_a_batch_emitted_directly_reaches_its_task_every_row_acked(cluster_factory, tmp_path):
    folder = str(tmp_path)
    builder = TopologyBuilder()
    builder.set_spout("words", _DirectBatches([f"w{i}" for i in range(25)], 10, folder))
    builder.set_bolt("where", TaskOfWord(folder), 3).direct_grouping("words", "direct")
    cluster = cluster_factory("local")
    cluster.submit_topology("direct", {}, builder.create_topology())
    cluster.wait_until_idle()
    assert Counter(int(line) for line in noted(folder, "acked")) == Counter(range(25))
    where = {line.split(" ")[2] for line in noted(folder, "tasks")}
    assert len(noted(folder, "tasks")) == 25 and len(where) == 1  # one task: the last


def test_counts_are_rows_and_the_batches_are_shown_beside_them():
    """Every statistic counts rows (messages); the REST API shows each Arrow component's
    record batches beside them, and nothing for a component that moves tuples."""
    from examples import arrow_word_count as example
    from examples.word_count import generated_sentences
    from sparkstorm import run
    from sparkstorm.control.api_views import batch_sizes

    sentences = generated_sentences(5000)
    built, conf = example.topology(sentences)
    result = run(built, conf, engine="local", until_idle=True)
    spout, split = result.stats["sentences"], result.stats["split"]
    assert spout["acked"] == spout["emitted"] == 5000  # rows, not batches
    assert split["executed"] == 5000 and split["emitted"] == 5000 * 8
    shown = batch_sizes(spout)
    assert shown["batchesEmitted"] == spout["batches_out"] >= 2
    assert shown["rowsPerBatchEmitted"] == round(5000 / spout["batches_out"], 1)
    assert batch_sizes(split)["rowsPerBatchExecuted"] == round(5000 / split["batches_in"], 1)
    assert batch_sizes(result.stats["__acker"]) == dict.fromkeys(shown)  # tuples: none
