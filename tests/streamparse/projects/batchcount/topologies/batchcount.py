"""Sentences, split into words, counted in batches between tick tuples (streamparse)."""

from batchers.bolts import SplitBolt, TotalBolt, WordBatcher
from batchers.spouts import SentenceSpout
from streamparse import Grouping, Topology


class BatchCount(Topology):
    config = {"topology.tick.tuple.freq.secs": 1}

    sentence_spout = SentenceSpout.spec()
    split_bolt = SplitBolt.spec(inputs=[sentence_spout], par=2)
    batch_bolt = WordBatcher.spec(
        inputs={split_bolt: Grouping.fields("word")}, par={"dev": 2, "prod": 3}
    )
    total_bolt = TotalBolt.spec(inputs={batch_bolt: Grouping.GLOBAL})
