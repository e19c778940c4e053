"""Storm's starter RollingTopWords: rolling counts, rankings on tick tuples, delayed acks.

    sparkstorm run examples/rolling_top_words.py

``RollingCountBolt`` holds its input tuples and counts them; on each tick it emits every
word's count in the window, anchored to the tuples it counted, then acks them (the
delayed-ack pattern: a word's tree completes only when its count has been ranked).
``RankingsBolt`` (global grouping) keeps the top N and emits the rankings when they change.
"""

from __future__ import annotations

import random
from collections import deque

from sparkstorm import Bolt, Config, Fields, Spout, TopologyBuilder

UNTIL_IDLE = True
"""A finite job: ``sparkstorm run`` ends it once it is idle (a stream runs until stopped)."""

WORDS = [f"word{i}" for i in range(50)]


class WordSpout(Spout):
    """Emits ``count`` words, skewed so that low-numbered words are frequent; replays fails."""

    def __init__(self, count: int = 5000, seed: int = 3):
        self.count, self.seed = count, seed

    def open(self, conf, context, collector):
        self.collector = collector
        rng = random.Random(self.seed)
        weights = [1 / (i + 1) for i in range(len(WORDS))]
        self.words = rng.choices(WORDS, weights, k=self.count)
        self.todo = deque(range(self.count))

    def next_tuple(self):
        if self.todo:
            i = self.todo.popleft()
            self.collector.emit([self.words[i]], msg_id=i)

    def fail(self, msg_id, reason=None):
        self.todo.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class RollingCountBolt(Bolt):
    """Counts words over a sliding window of ``window`` ticks; emits counts on each tick."""

    def __init__(self, window: int = 3):
        self.window = window

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.slots: deque[dict[str, int]] = deque([{}], maxlen=self.window)
        self.held: dict[str, list] = {}

    def execute(self, tup):
        if tup.is_tick():
            totals: dict[str, int] = {}
            for slot in self.slots:
                for word, n in slot.items():
                    totals[word] = totals.get(word, 0) + n
            for word, count in totals.items():
                self.collector.emit([word, count], self.held.get(word, []))
            for tuples in self.held.values():
                for held in tuples:
                    self.collector.ack(held)
            self.held = {}
            self.slots.append({})
            self.collector.ack(tup)
            return
        word = tup[0]
        self.slots[-1][word] = self.slots[-1].get(word, 0) + 1
        self.held.setdefault(word, []).append(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word", "count"))


class RankingsBolt(Bolt):
    """Keeps every word's latest rolling count; emits the top ``n`` whenever it changes."""

    def __init__(self, n: int = 5):
        self.n = n

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.counts: dict[str, int] = {}
        self.top: list = []

    def execute(self, tup):
        self.counts[tup["word"]] = tup["count"]
        top = sorted(self.counts.items(), key=lambda item: (-item[1], item[0]))[: self.n]
        if top != self.top:
            self.top = top
            self.collector.emit([top], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("rankings"))


def topology(count: int = 5000, tick_secs: int = 1):
    builder = TopologyBuilder()
    builder.set_spout("words", WordSpout(count))
    builder.set_bolt("counter", RollingCountBolt(), 2).fields_grouping(
        "words", Fields("word")
    ).add_configuration(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, tick_secs)
    builder.set_bolt("rankings", RankingsBolt()).global_grouping("counter")
    conf = Config()
    conf[Config.SPARKSTORM_CAPTURE] = ["rankings"]
    conf.set_message_timeout_secs(10)
    return builder.create_topology(), conf


def report(result) -> None:
    rankings = result.captured.get(("rankings", "default"), [])
    if rankings:
        print("latest top words:", ", ".join(f"{w}={c}" for w, c in rankings[-1][0]))
    spout = result.stats["words"]
    print(f"words acked: {spout['acked']:,}  failed: {spout['failed']:,}")
