"""Stateful bolts the state tests and the state benchmark share."""

from __future__ import annotations

from typing import Any

from sparkstorm import Fields, StatefulBolt


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
