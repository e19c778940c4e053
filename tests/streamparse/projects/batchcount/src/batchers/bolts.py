from collections import Counter

from streamparse import BatchingBolt, Bolt

from batchers.spouts import sentence


class SplitBolt(Bolt):
    """Splits a sentence into words; raises the first time it sees sentence 7.

    The raise fails the sentence's tree: its spout replays it, and counts stay exact.
    """

    outputs = ["word"]

    def initialize(self, conf, ctx):
        self.raised = False

    def process(self, tup):
        if tup.values.sentence == sentence(0) and not self.raised:
            self.raised = True
            raise RuntimeError("the first sight of sentence 0 fails, as a test")
        for word in tup.values.sentence.split():
            self.emit([word])


class WordBatcher(BatchingBolt):
    """Counts each word's tuples per batch: emits (word, how many in this batch)."""

    outputs = ["word", "count"]
    ticks_between_batches = 1

    def group_key(self, tup):
        return tup.values.word

    def process_batch(self, key, tups):
        self.emit([key, len(tups)])


class TotalBolt(Bolt):
    """Sums the batches' counts per word (one task: global grouping)."""

    outputs = ["word", "total"]

    def initialize(self, conf, ctx):
        self.totals = Counter()

    def process(self, tup):
        word, count = tup.values
        self.totals[word] += count
        self.emit([word, self.totals[word]])
