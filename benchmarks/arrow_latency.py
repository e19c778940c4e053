"""Complete latency of the Arrow word count on the continuous mode at a steady offered rate.

A spout offers ``rate`` rows a second (a sentence and its 8 words are 9 rows, so
1,000,000 rows/s is 111,111 sentences/s), taking what is due every 5 ms as a polled
source would; each sentence is a message, and its complete latency runs from its emit
to its ack. ``benchmarks.arrow`` runs it in a process of its own.
"""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa

from benchmarks.arrow_side import TUPLES_PER_SENTENCE
from benchmarks.modes import engine_for
from examples import arrow_word_count
from examples.word_count import generated_sentences
from sparkstorm import Fields, TopologyBuilder, run
from sparkstorm.arrow import ArrowSpout

POLL_SECS = 0.005
"""How often the spout takes what is due: a source polled every 5 ms."""


class SteadyBatches(ArrowSpout):
    """Offers ``rate`` sentences a second for ``secs`` seconds, each a message: what is due,
    every ``every`` seconds at most (a source polled that often)."""

    def __init__(self, sentences: list[str], rate: float, secs: float, every: float) -> None:
        self.sentences, self.rate, self.secs, self.every = sentences, rate, secs, every

    def open(self, conf, context, collector):  # type: ignore[no-untyped-def]
        self.collector = collector
        self.text = pa.array(self.sentences)
        self.start = time.monotonic()
        self.sent = 0
        self.last = 0.0

    def next_batch(self):  # type: ignore[no-untyped-def]
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        elapsed = min(now - self.start, self.secs)
        due = min(int(elapsed * self.rate), len(self.sentences))
        if due > self.sent:
            ids = list(range(self.sent, due))
            batch = pa.record_batch([self.text.slice(self.sent, due - self.sent)], ["sentence"])
            self.collector.emit_batch(batch, ids)
            self.sent = due

    def ack_batch(self, msg_ids):  # type: ignore[no-untyped-def]
        pass

    def declare_output_fields(self, declarer):  # type: ignore[no-untyped-def]
        declarer.declare(Fields("sentence"))


def latency(spark: Any, rate: float, secs: float) -> dict[str, float]:
    """Complete latency on the continuous mode at ``rate`` rows a second offered."""
    per_second = rate / TUPLES_PER_SENTENCE
    sentences = generated_sentences(int(per_second * secs) + 1, seed=7)
    builder = TopologyBuilder()
    builder.set_spout("sentences", SteadyBatches(sentences, per_second, secs, POLL_SECS))
    builder.set_bolt("split", arrow_word_count.Split(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", arrow_word_count.Count(), 2).fields_grouping("split", Fields("word"))
    conf: dict[str, Any] = {}
    name = engine_for("continuous", conf)
    result = run(builder.create_topology(), conf, name, spark)
    stats = result.stats["sentences"]
    return {
        "p50": stats["complete_latency_p50_ms"],
        "p99": stats["complete_latency_p99_ms"],
        "achieved": stats["acked"] * TUPLES_PER_SENTENCE / result.elapsed_secs,
        "acked": stats["acked"],
    }
