"""Stateful bolts the state tests and the state benchmark share."""

from __future__ import annotations

from typing import Any

from sparkstorm import Fields, StatefulBolt
from sparkstorm.arrow import StatefulArrowBolt


class StatefulWordCount(StatefulBolt):
    """The word count's count, in a ``KeyValueState``: emits (word, count) anchored, acks."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.counts = state

    def execute(self, tup: Any) -> None:
        word = tup.values[0]
        count = self.counts.get(word, 0) + 1
        self.counts.put(word, count)
        self.collector.emit([word, count], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


class StatefulArrowWordCount(StatefulArrowBolt):
    """:class:`StatefulWordCount` in columns: a batch's words read and written in one call
    each; emits (word, count) a row, anchored to the row it counted, and acks the batch."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.counts = state

    def execute_batch(self, batch: Any) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        words = batch.column(0)
        tally = pc.value_counts(words)
        distinct = tally.field("values")
        counts = self.counts.get_many(distinct, 0)
        totals = pa.array(counts, pa.int64())
        # each row's count: the word's total before the batch, plus its place among them
        where = pc.index_in(words, distinct)
        place = _rank_within(where.to_numpy(), len(distinct))
        now = pc.add(pc.take(totals, where), pa.array(place + 1))
        seen = tally.field("counts")
        self.counts.put_many(distinct, pc.add(totals, seen).to_pylist())
        out = pa.record_batch([words, now], names=["word", "count"])
        self.collector.emit_batch(out, anchors=pa.array(range(batch.num_rows)))
        self.collector.ack_batch(batch)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


def _rank_within(groups: Any, n: int) -> Any:
    """For each entry, how many entries of its group come before it (0, 1, 2...)."""
    import numpy as np

    order = np.argsort(groups, kind="stable")
    sizes = np.bincount(groups, minlength=n)
    starts = np.cumsum(sizes) - sizes
    rank = np.empty(len(groups), np.int64)
    rank[order] = np.arange(len(groups)) - np.repeat(starts, sizes)
    return rank
