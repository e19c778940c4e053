"""One row of ``benchmarks.arrow``, in a process of its own: warm rounds, then timed rounds.

    python -m benchmarks.arrow_side ROW SENTENCES WARM ROUNDS
    python -m benchmarks.arrow_side latency ROWS_PER_SEC SECS WARM_SECS

Prints one JSON line: the row's tuples/s of each timed round (and, for the engine rows,
each round's complete latency p99); for ``latency``, the continuous mode's complete
latency at a steady offered rate. Every round runs all ``SENTENCES``; the ``WARM``
rounds before them are the same work, untimed, so that each side's JIT, Python workers
and caches are as warm as the other's. Its own process, so that what one row leaves
behind (a JVM's heap, a worker's caches) neither helps nor burdens another, and so that
``benchmarks.arrow`` can measure the peak RSS of this process tree alone.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from examples import arrow_word_count
from examples.arrow_word_count import BATCH_ROWS
from examples.word_count import generated_sentences

TUPLES_PER_SENTENCE = 9
"""A sentence split and its 8 words counted: throughput counts all 9."""

LATENCY_ROUNDS = 3
"""Timed runs at the steady rate: the line gives their median p50 and p99, and the range."""

FLOOR_BATCH_ROWS = 4096
"""The floor's batch: the example's spout batch."""


def arrow_split(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The Arrow bolt's split, for ``mapInArrow``."""
    for batch in batches:
        yield pa.record_batch([pc.list_flatten(pc.split_pattern(batch.column(0), " "))], ["word"])


def pyspark(spark: Any, sentences: list[str]) -> dict[str, float]:
    """The fastest PySpark word count a user would write: pyarrow split, JVM count.

    No ``repartition``: ``createDataFrame`` already spreads the rows over the session's
    cores, and a shuffle more is a cost no user needs to pay.
    """
    started = time.perf_counter()
    df = spark.createDataFrame(pa.table({"sentence": sentences}))
    counts = df.mapInArrow(arrow_split, "word string").groupBy("word").count().collect()
    elapsed = time.perf_counter() - started
    words = sum(row["count"] for row in counts)
    assert words == 8 * len(sentences), words
    return {"tps": (len(sentences) + words) / elapsed, "whole": (len(sentences) + words) / elapsed}


def floor(sentences: list[str]) -> dict[str, float]:
    """The one-process columnar floor: pyarrow split and value counts over 4,096-row
    batches in a plain loop, the counts kept in a dict as the example's bolt keeps them;
    no engine, no acking, one core."""
    started = time.perf_counter()
    text = pa.array(sentences)
    counts: dict[str, int] = {}
    for start in range(0, len(text), FLOOR_BATCH_ROWS):
        words = pc.list_flatten(pc.split_pattern(text.slice(start, FLOOR_BATCH_ROWS), " "))
        counted = pc.value_counts(words)
        for word, n in zip(
            counted.field("values").to_pylist(), counted.field("counts").to_pylist(), strict=True
        ):
            counts[word] = counts.get(word, 0) + n
    elapsed = time.perf_counter() - started
    assert sum(counts.values()) == 8 * len(sentences)
    tps = len(sentences) * TUPLES_PER_SENTENCE / elapsed
    return {"tps": tps, "whole": tps}


class SentenceList(arrow_word_count.SentenceBatches):
    """The example's spout as a user writes it first: its sentences a Python list,
    each batch's made into an Arrow array as it is emitted."""

    def __init__(self, sentences: list[str]) -> None:
        self.sentences = sentences

    def is_exhausted(self) -> bool:
        return not self.retry and self.next_row >= len(self.sentences)

    def next_batch(self) -> None:
        ids = [self.retry.popleft() for _ in range(min(BATCH_ROWS, len(self.retry)))]
        end = min(len(self.sentences), self.next_row + self.step * (BATCH_ROWS - len(ids)))
        ids += range(self.next_row, end, self.step)
        self.next_row = max(self.next_row, end)
        if ids:
            column = pa.array([self.sentences[i] for i in ids], pa.string())
            self.collector.emit_batch(pa.record_batch([column], names=["sentence"]), ids)


def engine_row(
    engine: str, tracked: bool = True, spout: type | None = None
) -> Callable[[Any, list[str]], dict[str, float]]:
    """The Arrow word count example on ``engine``, every sentence a tracked message
    (``tracked=False``: no acker, so nothing is tracked: what the engine costs alone;
    ``spout``: another spout class than the example's).

    ``whole`` is the job as a user times it: from building the topology (the spout
    takes the sentences) to ``run`` returning; ``tps`` is the steady rate, over
    ``RunResult.elapsed_secs`` (start-up and the idle grace apart).
    """

    def one_run(spark: Any, sentences: list[str]) -> dict[str, float]:
        from benchmarks.modes import engine_for
        from sparkstorm import run

        started = time.perf_counter()
        topology, conf = arrow_word_count.topology(sentences, spout)
        built = time.perf_counter() - started
        if not tracked:
            conf.set_num_ackers(0)
        name = engine_for(engine, conf)
        result = run(topology, conf, name, spark if name == "spark" else None)
        whole = time.perf_counter() - started
        stats = result.stats["sentences"]
        assert stats["acked"] == len(sentences), stats
        return {
            "tps": len(sentences) * TUPLES_PER_SENTENCE / result.elapsed_secs,
            "whole": len(sentences) * TUPLES_PER_SENTENCE / whole,
            "built": built,
            "startup": result.startup_secs,
            "elapsed": result.elapsed_secs,
            "after": whole - built - result.startup_secs - result.elapsed_secs,
            "p99": stats["complete_latency_p99_ms"],
        }

    return one_run


def structured_streaming(spark: Any, sentences: list[str]) -> dict[str, float]:
    """Structured Streaming on the same split, at its steady rate (first micro-batch apart)."""
    from benchmarks.streaming import structured_streaming as streaming

    measured = streaming(spark, sentences, split=arrow_split)
    return {"tps": measured["steady_tps"], "whole": measured["tps"]}


def session() -> Any:
    """A ``local[2]`` session as a user gets it (the Spark UI on), start-up not timed."""
    from sparkstorm.engines.spark import create_session

    spark = create_session("local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    return spark


ROWS: dict[str, Callable[[Any, list[str]], dict[str, float]]] = {
    "continuous": engine_row("continuous"),
    "list": engine_row("continuous", spout=SentenceList),
    "untracked": engine_row("continuous", tracked=False),
    "local": engine_row("local"),
    "pyspark": pyspark,
    "streaming": structured_streaming,
    "floor": lambda _spark, sentences: floor(sentences),
}


SPARK_ROWS = ("continuous", "list", "untracked", "pyspark", "streaming")


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if sys.argv[1] == "latency":
        from benchmarks.arrow_latency import latency

        rate, secs, warm_secs = map(float, sys.argv[2:5])
        spark = session()
        latency(spark, rate, warm_secs)
        rounds = [latency(spark, rate, secs) for _ in range(LATENCY_ROUNDS)]
        print(json.dumps({"row": "latency", "rounds": rounds}))
        spark.stop()
        return
    row, count, warm, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    sentences = generated_sentences(count)
    spark = session() if row in SPARK_ROWS else None
    measure = ROWS[row]
    for _ in range(warm):
        measure(spark, sentences)
    timed = [measure(spark, sentences) for _ in range(rounds)]
    if spark is not None:
        spark.stop()
    print(json.dumps({"row": row, "rounds": timed}))


if __name__ == "__main__":
    main()
