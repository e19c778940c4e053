from streamparse import ReliableSpout

WORDS = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape"]


def sentence(i):
    """Sentence ``i``: three to five words, the same in every run."""
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(3 + i % 3))


class SentenceSpout(ReliableSpout):
    """Emits ``batchcount.sentences`` sentences once each, tracked, then nothing."""

    outputs = ["sentence"]
    max_fails = 5

    def initialize(self, stormconf, context):
        self.total = int(stormconf.get("batchcount.sentences", 100))
        self.index = 0

    def next_tuple(self):
        if self.index < self.total:
            self.emit([sentence(self.index)], tup_id=self.index)
            self.index += 1
