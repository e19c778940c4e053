"""Storm's stock test components (``org.apache.storm.testing``), for tests and examples."""

from __future__ import annotations

import random
import time
from typing import Any

from sparkstorm.reliability.collectors import BasicOutputCollector
from sparkstorm.reliability.spout_collector import SpoutOutputCollector
from sparkstorm.topology.components import BasicBolt, Spout
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import OutputFieldsDeclarer
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.tuple import Tuple

WORDS = ("nathan", "mike", "jackson", "golda", "bertels")


class TestWordSpout(Spout):
    """Emits a random word of Storm's five every 100 ms, untracked: ``TestWordSpout``.

    .. versionadded:: 0.2.0
    """

    __test__ = False  # pytest: a component, not a test class

    def __init__(self, interval_secs: float = 0.1) -> None:
        self.interval_secs = interval_secs

    def open(
        self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector
    ) -> None:
        """Seed the words."""
        self.collector, self.last = collector, 0.0
        self.random = random.Random(context.get_this_task_id())

    def next_tuple(self) -> None:
        """A word, if 100 ms passed since the last (never blocks)."""
        now = time.monotonic()
        if now - self.last >= self.interval_secs:
            self.last = now
            self.collector.emit([self.random.choice(WORDS)])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """``word``."""
        declarer.declare(Fields("word"))


class TestWordCounter(BasicBolt):
    """Counts each word, emitting (word, count so far): ``TestWordCounter``.

    .. versionadded:: 0.2.0
    """

    __test__ = False

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """Start counting."""
        self.counts: dict[Any, int] = {}

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        """Count the word."""
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        collector.emit([word, self.counts[word]])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """``word``, ``count``."""
        declarer.declare(Fields("word", "count"))


class TestGlobalCount(BasicBolt):
    """Counts every tuple, emitting the count so far: ``TestGlobalCount``.

    .. versionadded:: 0.2.0
    """

    __test__ = False

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """Start at zero."""
        self.count = 0

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        """One more."""
        self.count += 1
        collector.emit([self.count])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """``count``."""
        declarer.declare(Fields("count"))


class TestAggregatesCounter(BasicBolt):
    """Keeps the last count per word and emits their sum: ``TestAggregatesCounter``.

    .. versionadded:: 0.2.0
    """

    __test__ = False

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """No counts yet."""
        self.counts: dict[Any, int] = {}

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        """Take (word, count); emit the sum over words."""
        word, count = tup.values[0], tup.values[1]
        self.counts[word] = count
        collector.emit([sum(self.counts.values())])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """``agg-global``."""
        declarer.declare(Fields("agg-global"))


class IdentityBolt(BasicBolt):
    """Emits what it receives, as ``fields``: Storm's ``IdentityBolt``.

    .. versionadded:: 0.2.0
    """

    def __init__(self, fields: Fields) -> None:
        self.fields = fields if isinstance(fields, Fields) else Fields(*fields)

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        """Pass the values on."""
        collector.emit(list(tup.values))

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """The fields given."""
        declarer.declare(self.fields)
