"""Arrow components for the tests: a sentence spout, a columnar split, counts, poison."""

from __future__ import annotations

import os
from collections import Counter
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from sparkstorm import Bolt, Fields
from sparkstorm.arrow import ArrowBolt, ArrowSpout


class SentenceBatches(ArrowSpout):
    """Emits ``sentences`` in batches of ``size``, each row a message (its index); a
    failed message is emitted again in a later batch. What happened is kept in a folder
    every process sees: ``acked``, ``failed`` (one line per outcome)."""

    def __init__(self, sentences: list[str], size: int, folder: str) -> None:
        self.sentences, self.size, self.folder = sentences, size, folder

    def open(self, conf, context, collector):
        self.collector = collector
        self.next = 0
        self.retry: list[int] = []

    def next_batch(self):
        ids = self.retry[: self.size]
        self.retry = self.retry[len(ids) :]
        take = min(self.size - len(ids), len(self.sentences) - self.next)
        ids += list(range(self.next, self.next + take))
        self.next += take
        if ids:
            texts = pa.array([self.sentences[i] for i in ids])
            self.collector.emit_batch(pa.record_batch([texts], names=["sentence"]), ids)

    def ack(self, msg_id):
        _note(self.folder, "acked", msg_id)

    def fail(self, msg_id, reason=None):
        _note(self.folder, "failed", f"{msg_id} {getattr(reason, 'kind', reason)}")
        self.retry.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("sentence"))


def _note(folder: str, what: str, line: object) -> None:
    with open(os.path.join(folder, what), "a") as out:
        out.write(f"{line}\n")


def noted(folder: str, what: str) -> list[str]:
    path = os.path.join(folder, what)
    return open(path).read().split("\n")[:-1] if os.path.exists(path) else []


class SplitColumns(ArrowBolt):
    """Splits sentences into words with pyarrow: every word anchored to its sentence.

    A sentence holding ``poison`` fails alone (its message), the first ``times`` times
    it is seen (counted in a file, so across processes)."""

    def __init__(self, folder: str = "", times: int = 0) -> None:
        self.folder, self.times = folder, times

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute_batch(self, batch):
        sentences = batch.column(0)
        poisoned = pc.match_substring(sentences, "poison").to_numpy(zero_copy_only=False)
        if poisoned.any() and self._poison_again(int(poisoned.sum())):
            self.collector.fail_rows(poisoned, "poison")
            keep = pa.array(~poisoned)
            rows = pc.indices_nonzero(keep)
            sentences = pc.filter(sentences, keep)
        else:
            rows = pa.array(range(batch.num_rows), pa.int64())
            poisoned[:] = False
        lists = pc.split_pattern(sentences, " ")
        words = pa.record_batch([pc.list_flatten(lists)], names=["word"])
        parents = pc.take(rows, pc.list_parent_indices(lists))
        self.collector.emit_batch(words, anchors=parents)
        if (~poisoned).any():
            self.collector.ack_rows(~poisoned)

    def _poison_again(self, n: int) -> bool:
        seen = len(noted(self.folder, "poisoned"))
        if seen >= self.times:
            return False
        for _ in range(n):
            _note(self.folder, "poisoned", "x")
        return True

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class CountWords(Bolt):
    """A plain bolt fed by the Arrow split: counts words, acks each (one Tuple a row)."""

    COUNTS: ClassVar[Counter[str]] = Counter()

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        _note(self.folder, f"words-{os.getpid()}", tup[0])
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


def counted(folder: str) -> Counter[str]:
    """Every word every CountWords task saw, counted."""
    total: Counter[str] = Counter()
    for name in os.listdir(folder):
        if name.startswith("words-"):
            total.update(noted(folder, name))
    return total


class FailWord(Bolt):
    """A plain bolt that fails the tuple of ``word`` the first ``times`` times it meets it
    (counted in a file), and acks every other."""

    def __init__(self, word: str, folder: str, times: int = 1) -> None:
        self.word, self.folder, self.times = word, folder, times

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] == self.word and len(noted(self.folder, "word-failed")) < self.times:
            _note(self.folder, "word-failed", tup[0])
            self.collector.fail(tup)
            return
        _note(self.folder, f"words-{os.getpid()}", tup[0])
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


class TaskOfWord(Bolt):
    """Records which task got each word, from which stream."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def prepare(self, conf, context, collector):
        self.collector, self.task = collector, context.get_this_task_id()

    def execute(self, tup):
        _note(self.folder, "tasks", f"{tup.source_component} {tup[0]} {self.task}")
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


class WordsAsColumns(ArrowBolt):
    """An Arrow bolt fed by a tuple stream: each run of word tuples arrives as one batch;
    it passes the words on, each anchored to its input row, and acks the batch."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute_batch(self, batch):
        self.collector.emit_batch(batch, anchors=pa.array(range(batch.num_rows)))
        self.collector.ack_batch(batch)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class Holds(ArrowBolt):
    """Acks nothing: every row of every batch it gets times out (or is reset once)."""

    def __init__(self, reset: bool = False) -> None:
        self.reset = reset

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute_batch(self, batch):
        if self.reset:
            self.collector.reset_timeout_rows([True] * batch.num_rows)

    def declare_output_fields(self, declarer):
        pass
