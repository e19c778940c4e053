"""Storm's canonical word count: sentences -> split -> count, with acking on.

Run it on Spark (``local[*]``):   sparkstorm run examples/word_count.py
or on the in-process engine:      sparkstorm run examples/word_count.py --engine local

The spout emits a fixed number of sentences, each with a message id, and replays a
sentence whose tree fails; the run ends when every sentence is acked.
"""

from __future__ import annotations

import random
from collections import deque

from sparkstorm import BasicBolt, Bolt, CompletableSpout, Config, Fields, Spout, TopologyBuilder

UNTIL_IDLE = True
"""A finite job: ``sparkstorm run`` ends it once it is idle (a stream runs until stopped)."""

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


def split_sentence(sentence: str) -> list[str]:
    """The split step, shared with the plain-PySpark baseline of the benchmarks."""
    return sentence.split()


def count_word(counts: dict[str, int], word: str) -> int:
    """The count step, shared with the plain-PySpark baseline: one more ``word``."""
    count = counts.get(word, 0) + 1
    counts[word] = count
    return count


def generated_sentences(
    count: int, words: int = 8, vocabulary: int = 5000, seed: int = 42
) -> list[str]:
    """``count`` seeded sentences of ``words`` words from a ``vocabulary``-word vocabulary."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(vocabulary)]
    return [" ".join(rng.choices(vocab, k=words)) for _ in range(count)]


class SentenceSpout(Spout, CompletableSpout):
    """Emits each sentence once with its index as msg id; replays what fails.

    A ``CompletableSpout``: it says when it has nothing left to emit, so the run ends
    as soon as every sentence has its outcome.
    """

    def __init__(self, sentences: list[str]):
        self.sentences = sentences

    def open(self, conf, context, collector):
        self.collector = collector
        # each task takes its share of the sentences
        tasks = context.get_component_tasks(context.get_this_component_id())
        index = tasks.index(context.get_this_task_id())
        self.todo = deque(range(index, len(self.sentences), len(tasks)))
        self.acked = 0
        self.failed = 0

    def next_tuple(self):
        if self.todo:
            i = self.todo.popleft()
            self.collector.emit([self.sentences[i]], msg_id=i)

    def is_exhausted(self):  # every sentence out, none failed and waiting to go again
        return not self.todo

    def ack(self, msg_id):
        self.acked += 1

    def fail(self, msg_id, reason=None):
        self.failed += 1
        self.todo.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("sentence"))


class SplitSentence(Bolt):
    """Splits a sentence into words, each anchored to the sentence, then acks it."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        for word in split_sentence(tup[0]):
            self.collector.emit([word], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class WordCount(BasicBolt):
    """Counts words (fields grouping sends each word to one task) and emits the count."""

    def prepare(self, conf, context):
        self.counts = {}

    def execute(self, tup, collector):
        word = tup[0]
        collector.emit([word, count_word(self.counts, word)])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word", "count"))


def build(sentences: list[str], parallelism: int = 2, ackers: int = 1):
    """The topology and its configuration."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(sentences))
    builder.set_bolt("split", SplitSentence(), parallelism).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCount(), parallelism).fields_grouping("split", Fields("word"))
    conf = Config()
    conf.set_num_ackers(ackers)
    return builder.create_topology(), conf


def topology():
    """What ``sparkstorm run examples/word_count.py`` runs: 20,000 of Storm's sentences.

    The count bolt's emits are captured (sent back to the driver) for :func:`report`.
    """
    topology, conf = build([SENTENCES[i % len(SENTENCES)] for i in range(20_000)])
    # at most 100 sentences in flight: each tree completes in milliseconds (a flood of
    # 20,000 would make each wait behind the others: ~120 ms); for throughput rather
    # than latency, raise it: -o topology.max.spout.pending=1000
    conf.set_max_spout_pending(100)
    conf[Config.SPARKSTORM_CAPTURE] = ["count"]
    conf[Config.SPARKSTORM_CAPTURE_MAX_VALUES] = 150_000  # every count emitted: 128,000
    return topology, conf


def report(result) -> None:
    """Called by ``sparkstorm run`` at the end: the top words and the acked/failed totals."""
    counts = {}
    for word, count in result.captured.get(("count", "default"), []):
        counts[word] = max(count, counts.get(word, 0))
    top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]
    print("top words:", ", ".join(f"{word}={count:,}" for word, count in top))
    spout = result.stats["sentences"]
    print(f"sentences acked: {spout['acked']:,}  failed: {spout['failed']:,}")
