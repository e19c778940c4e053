"""A windowed word count in columns against tuples, side by side in one run.

    python -m benchmarks.windows [--engine local] [--sentences 100000] [--window-ms 500]
                                 [--rounds 3] [--save]

The README's word count with its count over tumbling windows of ``--window-ms``
(``with_tumbling_window(Duration(secs))``; a count window's last one would never fill,
and its sentences would wait for the message timeout), each window's counts emitted to a
sink that acks them, anchored to the window (Storm's windowed emit), every sentence a
tracked message, complete once each of its words has left its window and the counts it
went into are acked:

- tuples: ``SentenceSpout`` -> ``SplitSentence`` -> a ``WindowedBolt`` counting with a
  ``Counter`` and emitting the window's counts as one tuple (the cheapest anchoring a
  user would write: one output) -> a sink;
- columns: ``examples/arrow_word_count.py``'s spout and split -> a ``WindowedArrowBolt``
  counting with ``pyarrow.compute.value_counts`` and emitting the counts as one row (a
  row per word would be in every tree of the window: words x sentences links) -> a sink.

Reported: tuples/s (sentences split plus words counted; medians of ``--rounds``
interleaved rounds after a warm-up of each), complete latency p99, and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import uuid
from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.modes import engine_for
from benchmarks.report import report
from examples import arrow_word_count
from examples.word_count import SentenceSpout, SplitSentence, generated_sentences
from sparkstorm import Bolt, Duration, Fields, TopologyBuilder, WindowedBolt, run
from sparkstorm.arrow import ArrowBolt, WindowedArrowBolt


class TupleWindowCount(WindowedBolt):
    """Counts a window's words; emits the counts as one tuple, anchored to the window."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, window: Any) -> None:
        self.collector.emit([dict(Counter(t.values[0] for t in window.get()))])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("counts"))


class ColumnWindowCount(WindowedArrowBolt):
    """Counts a window's words with pyarrow; emits them as one row (a list of words, a
    list of counts), anchored to the window."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, window: Any) -> None:
        tally = pc.value_counts(window.get().column(0).combine_chunks())
        words, counts = (pa.ListArray.from_arrays([0, len(tally)], tally.field(f)) for f in FIELDS)
        self.collector.emit_batch(pa.record_batch([words, counts], ["words", "counts"]))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("words", "counts"))


FIELDS = ("values", "counts")


class TupleSink(Bolt):
    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


class ColumnSink(ArrowBolt):
    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute_batch(self, batch: pa.RecordBatch) -> None:
        self.collector.ack_batch(batch)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def windowed_count(engine: str, sentences: list[str], window: int, columns: bool) -> dict:
    """One run: tuples/s and complete latency p99 (every sentence must be acked)."""
    builder = TopologyBuilder()
    if columns:
        builder.set_spout("sentences", arrow_word_count.SentenceBatches(sentences))
        builder.set_bolt("split", arrow_word_count.Split(), 2).shuffle_grouping("sentences")
        count: Any = ColumnWindowCount().with_tumbling_window(Duration(window / 1000))
        sink: Any = ColumnSink()
    else:
        builder.set_spout("sentences", SentenceSpout(sentences))
        builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
        count, sink = TupleWindowCount().with_tumbling_window(Duration(window / 1000)), TupleSink()
    builder.set_bolt("count", count, 2).fields_grouping("split", Fields("word"))
    builder.set_bolt("sink", sink, 2).shuffle_grouping("count")
    conf: dict[str, Any] = {}
    name = f"windows-{uuid.uuid4().hex[:8]}"
    result = run(
        builder.create_topology(), conf, engine=engine_for(engine, conf), name=name, spark_ui=False
    )
    spout = result.stats["sentences"]
    assert spout["acked"] == len(sentences), spout
    words = sum(len(s.split()) for s in sentences)
    return {
        "tps": (len(sentences) + words) / result.elapsed_secs,
        "acked": spout["acked"],
        "p99": spout["complete_latency_p99_ms"],
    }


def columns_against_tuples(engine: str, total: int, window: int, rounds: int) -> list[str]:
    sentences = generated_sentences(total)
    figures: dict[bool, list[dict]] = {False: [], True: []}
    for columns in (False, True):  # warm-up: imports, Spark's first jobs
        windowed_count(engine, generated_sentences(5000, seed=1), window, columns)
    for _ in range(rounds):
        for columns in (False, True):
            figures[columns].append(windowed_count(engine, sentences, window, columns))

    def median(columns: bool, key: str) -> float:
        return statistics.median(f[key] for f in figures[columns])

    tuples, arrow = median(False, "tps"), median(True, "tps")
    return [
        "",
        f"Windowed word count on the {engine} engine, {total:,} sentences of 8 words, "
        f"tumbling windows of {window:,} ms, every sentence tracked "
        f"(median of {rounds} interleaved rounds)",
        "",
        "| count | tuples/s | complete p99 ms | vs tuples |",
        "|---|---|---|---|",
        f"| WindowedBolt (tuples) | {tuples:,.0f} | {median(False, 'p99'):,.0f} | 1.00x |",
        f"| WindowedArrowBolt (columns) | {arrow:,.0f} | {median(True, 'p99'):,.0f} | "
        f"{arrow / tuples:.2f}x |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", default="local", choices=["local", "spark", "continuous"])
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--window-ms", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    lines = columns_against_tuples(args.engine, args.sentences, args.window_ms, args.rounds)
    report(f"windows-{args.engine}", lines, args.save)


if __name__ == "__main__":
    main()
