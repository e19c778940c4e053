"""The engine a Spark user would pick instead: Structured Streaming on the same word count.

    python -m benchmarks.streaming [--sentences N]

A file source over text files of 10,000 sentences each, the same Python split as the
bolts (``split_sentence``) in ``mapInArrow``, and a streaming ``groupBy("word").count()``
into the ``noop`` sink (update mode), run with ``trigger(availableNow=True)``: every file
is read in micro-batches of ``maxFilesPerTrigger`` files, then the query stops.
Throughput counts sentences split plus words counted, as for sparkstorm. It has no
per-message tracking: a micro-batch is Structured Streaming's unit of reliability.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from examples.word_count import generated_sentences, split_sentence

LINES_PER_FILE = 10_000
FILES_PER_TRIGGER = 2


def write_files(sentences: list[str], folder: Path) -> None:
    """The sentences as text files of ``LINES_PER_FILE`` lines each."""
    for start in range(0, len(sentences), LINES_PER_FILE):
        path = folder / f"part-{start // LINES_PER_FILE:05d}.txt"
        path.write_text("\n".join(sentences[start : start + LINES_PER_FILE]) + "\n")


def split_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The bolts' split over Arrow batches of sentences, for ``mapInArrow``."""
    for batch in batches:
        words = [w for s in batch.column(0).to_pylist() for w in split_sentence(s)]
        yield pa.RecordBatch.from_pydict({"word": words})


def structured_streaming(
    spark: Any, sentences: list[str], split: Any = split_batches
) -> dict[str, float]:
    """Run the streaming word count once over ``sentences``; tuples/s and micro-batches.

    ``split`` is the ``mapInArrow`` function (the bolts' Python split by default).
    """

    with tempfile.TemporaryDirectory(prefix="sparkstorm-ss-") as tmp:
        source, checkpoint = Path(tmp, "in"), Path(tmp, "checkpoint")
        source.mkdir()
        write_files(sentences, source)
        # Tuned as the Structured Streaming guide advises: the default 200 shuffle
        # partitions would run 200 state-store tasks a micro-batch on 2 cores (measured
        # 16k tuples/s); a partition per core is what a Spark user would set.
        before = spark.conf.get("spark.sql.shuffle.partitions")
        spark.conf.set("spark.sql.shuffle.partitions", str(spark.sparkContext.defaultParallelism))
        # every micro-batch's progress, not the last 100 only (2,000,000 sentences are 100)
        spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
        started = time.perf_counter()
        query = (
            spark.readStream.option("maxFilesPerTrigger", FILES_PER_TRIGGER)
            .text(str(source))
            .mapInArrow(split, "word string")
            .groupBy("word")
            .count()
            .writeStream.format("noop")
            .outputMode("update")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        try:
            query.awaitTermination()
        finally:
            spark.conf.set("spark.sql.shuffle.partitions", before)
        elapsed = time.perf_counter() - started
        progress = query.recentProgress
    rows = sum(p["numInputRows"] for p in progress)
    assert rows == len(sentences), (rows, len(sentences))
    words = sum(len(split_sentence(s)) for s in sentences)
    per_row = (len(sentences) + words) / len(sentences)
    later = progress[1:]  # the first micro-batch apart: it plans the query and its state
    steady_secs = sum(p["durationMs"]["triggerExecution"] for p in later) / 1000
    steady_rows = sum(p["numInputRows"] for p in later)
    whole = (len(sentences) + words) / elapsed
    return {
        "tps": whole,
        # one micro-batch only (a small run): no steady rate but the whole query's
        "steady_tps": per_row * steady_rows / steady_secs if steady_rows else whole,
        "batches": len(progress),
    }


def main() -> None:
    from benchmarks.wordcount import warmed_session

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=200_000)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark, _ = warmed_session()
    sentences = generated_sentences(args.sentences)
    structured_streaming(spark, sentences[:20_000])  # warm the streaming path up
    result = structured_streaming(spark, sentences)
    print(
        f"Structured Streaming: {result['tps']:,.0f} tuples/s ({result['steady_tps']:,.0f} "
        f"steady, its first micro-batch apart), {result['batches']} batches"
    )
    spark.stop()


if __name__ == "__main__":
    main()
