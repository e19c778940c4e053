"""Storm's Trident word count: exactly-once counts in a state, a batch at a time.

Run it on Spark (``local[*]``, the continuous mode):   sparkstorm run examples/trident_word_count.py
on Spark's superstep mode:  sparkstorm run examples/trident_word_count.py --mode superstep
or on the in-process engine: sparkstorm run examples/trident_word_count.py --engine local

A batch spout emits Storm's sentences in batches of 5,000; each batch is split, grouped
by word, and counted into a ``MemoryMapState`` in its commit, so a replayed batch is
counted once. The new counts of each commit go out on the stream ``counts``, which the
run captures for the report.

Its DRPC function ``words`` sums the counts of the words it is given, as Storm's
``TridentWordCount`` does. Keep the run going (``-t 0``: until Ctrl-C) and ask it from
another terminal::

    sparkstorm run examples/trident_word_count.py -t 0
    sparkstorm drpc trident_word_count words "the man"      # [[24000]]
"""

from __future__ import annotations

from sparkstorm import Config, Fields
from sparkstorm.trident import (
    BaseFunction,
    Count,
    FilterNull,
    FixedBatchSpout,
    MapGet,
    MemoryMapState,
    Sum,
    TridentTopology,
)

UNTIL_IDLE = True
"""A finite job: ``sparkstorm run`` ends it once every batch has committed."""

SENTENCES = [
    "the cow jumped over the moon",
    "the man went to the store and bought some candy",
    "four score and seven years ago",
    "how many apples can you eat",
    "to be or not to be the person",
]


class Split(BaseFunction):
    """One tuple per word of the sentence."""

    def execute(self, tup, collector):
        for word in tup[0].split():
            collector.emit([word])


def topology():
    """What ``sparkstorm run`` runs: 20,000 sentences, counted exactly once."""
    spout = FixedBatchSpout(Fields("sentence"), 5000, *([SENTENCES[i % 5]] for i in range(20_000)))
    trident = TridentTopology()
    counts = (
        trident.new_stream("sentences", spout)
        .each(Fields("sentence"), Split(), Fields("word"))
        .parallelism_hint(2)
        .group_by(Fields("word"))
        .persistent_aggregate(MemoryMapState.Factory(), Count(), Fields("count"))
        .parallelism_hint(2)
    )
    counts.new_values_stream().name("counts")
    (
        trident.new_drpc_stream("words")  # served by the run: sparkstorm drpc, the REST API
        .each(Fields("args"), Split(), Fields("word"))
        .group_by(Fields("word"))
        .state_query(counts, Fields("word"), MapGet(), Fields("count"))
        .each(Fields("count"), FilterNull())
        .aggregate(Fields("count"), Sum(), Fields("sum"))
    )
    conf = Config()
    conf[Config.SPARKSTORM_CAPTURE] = ["counts"]
    return trident.build(), conf


def report(result) -> None:
    """Called by ``sparkstorm run`` at the end: each word's count after the last commit."""
    counts: dict[str, int] = {}
    for word, count in result.captured.get(("counts", "counts"), []):
        counts[word] = max(counts.get(word, 0), count)
    top = sorted(counts.items(), key=lambda item: -item[1])[:5]
    print("top words:", ", ".join(f"{word} {count:,}" for word, count in top))
    print(f"{sum(counts.values()):,} words counted in {len(counts)} distinct words")
