"""What a checkpoint of a stateful bolt task costs, against its state's size and interval.

    python -m benchmarks.state [--sizes 1000,100000,1000000] [--changed 1000]
                               [--intervals 100,300,1000,3000] [--engine local] [--save]
                               [--columns 1000]

``--engine`` is ``local``, ``spark`` (the superstep mode) or ``continuous``.

One task's ``KeyValueState`` is filled with N keys and committed; then each of 20
checkpoints changes ``--changed`` keys and is staged, marked and folded in (what a
checkpoint does for one task, without the engine's drain). Reported per provider:
seconds per checkpoint (median), and, for comparison, the bytes a plain bolt's attribute
dict of the same size costs to pickle on every superstep it runs (what the Spark engine
does for state kept in attributes). Redis is the real server on 127.0.0.1:6379.

Against the interval, end to end: the README's word count (100,000 sentences of 8 words,
a 5,000-word vocabulary, acking on) with its count kept in a ``StatefulBolt`` on Redis,
at each ``topology.state.checkpoint.interval.ms``, and side by side in the same run the
same topology with the count in a plain bolt's attributes (no checkpoints). Reported:
tuples/s and its ratio to the plain count, complete latency p50/p99, checkpoints taken.
``topology.max.spout.pending`` is the default (none), then 2,000 at the first two
intervals, in both (a stateful topology takes at most that many messages per checkpoint,
as their acks wait for the commit).

``--columns INTERVAL``: the count in columns against tuples, side by side in one run
(three rounds each, interleaved, after a warm-up of each; medians): the Arrow word count
(``examples/arrow_word_count.py``'s spout and split) with its count a
``StatefulArrowBolt`` (a batch's words read and written in one call each), against the
README's word count with its count a ``StatefulBolt``; both on Redis, at that checkpoint
interval, every sentence a tracked message, on ``--engine``.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import redis

from benchmarks.modes import engine_for
from benchmarks.report import report
from examples import arrow_word_count
from examples.word_count import SentenceSpout, SplitSentence, WordCount, generated_sentences
from sparkstorm import Config, Fields, TopologyBuilder, run
from sparkstorm.arrow import StatefulArrowBolt
from sparkstorm.state.key_value import KeyValueState
from sparkstorm.state.stores import open_store
from tests.state.bolts import StatefulWordCount

CHECKPOINTS = 20
PENDING = 2000
SENTENCES = 100_000


def checkpoint_secs(provider: str, config: dict, size: int, changed: int) -> tuple[float, float]:
    """(median seconds per checkpoint of ``changed`` keys, seconds to load the state)."""
    topology = f"bench-{uuid.uuid4().hex[:8]}"
    store = open_store(provider, config, topology)
    state = KeyValueState(provider, config, topology, "count:1")
    for key in range(size):
        state.put(f"word{key}", key)
    state.prepare(0)
    store.mark_committed(0)
    state.commit(0)
    times = []
    for txid in range(1, CHECKPOINTS + 1):
        for key in range(changed):
            name = f"word{(txid * 7919 + key * 104729) % size}"
            state.put(name, state.get(name, 0) + 1)
        started = time.perf_counter()
        state.prepare(txid)
        store.mark_committed(txid)
        state.commit(txid)
        times.append(time.perf_counter() - started)
    started = time.perf_counter()
    loaded = KeyValueState(provider, config, topology, "count:1")
    load = time.perf_counter() - started
    assert len(loaded) == size
    return statistics.median(times), load


@contextmanager
def redis_prefix() -> Iterator[str]:
    """A key prefix of the benchmark's own in the real Redis; its keys are deleted after."""
    prefix = f"sparkstorm-bench:{uuid.uuid4().hex[:8]}"
    try:
        yield prefix
    finally:
        client = redis.Redis.from_url("redis://127.0.0.1:6379/0")
        keys = list(client.scan_iter(f"{prefix}:*"))
        if keys:
            client.delete(*keys)
        client.close()


def measure(sizes: list[int], changed: int) -> list[str]:
    """The table of checkpoint costs for each provider and state size."""
    lines = [
        f"Checkpoint cost of one stateful task, {changed:,} keys changed per checkpoint "
        f"(median of {CHECKPOINTS})",
        "",
        "| keys in state | provider | ms per checkpoint | load ms | attributes pickled per "
        "superstep instead |",
        "|---|---|---|---|---|",
    ]
    with redis_prefix() as prefix, tempfile.TemporaryDirectory() as directory:
        providers = {
            "redis": {"url": "redis://127.0.0.1:6379/0", "key_prefix": prefix},
            "directory": {"path": directory},
        }
        for size in sizes:
            plain = len(pickle.dumps({f"word{k}": k for k in range(size)}, protocol=5))
            for provider, config in providers.items():
                secs, load = checkpoint_secs(provider, config, size, changed)
                lines.append(
                    f"| {size:,} | {provider} | {secs * 1000:.1f} | {load * 1000:.0f} | "
                    f"{plain / 1e6:.2f} MB |"
                )
    return lines


def redis_state(conf: Config, prefix: str, interval_ms: int) -> None:
    """Keep the stateful bolts' state in the real Redis under ``prefix``, checkpointed
    every ``interval_ms``."""
    conf["topology.state.provider"] = "redis"
    conf["topology.state.provider.config"] = {
        "url": "redis://127.0.0.1:6379/0",
        "key_prefix": prefix,
    }
    conf["topology.state.checkpoint.interval.ms"] = interval_ms


def run_counted(
    engine: str, builder: TopologyBuilder, conf: Config, kind: str, sentences: int
) -> tuple[Any, str]:
    """Run the topology on ``engine`` under a fresh name; every sentence must be acked."""
    name = f"{kind}-{uuid.uuid4().hex[:8]}"
    on = engine_for(engine, conf)
    result = run(builder.create_topology(), conf, engine=on, name=name, spark_ui=False)
    acked = result.stats["sentences"]["acked"]
    assert acked == sentences, result.stats["sentences"]
    return result, name


def word_count(
    engine: str, sentences: list[str], interval_ms: int | None, prefix: str, pending: int | None
) -> dict:
    """One run; ``interval_ms`` None: the plain count, in attributes."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(sentences))
    builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
    count = WordCount() if interval_ms is None else StatefulWordCount()
    builder.set_bolt("count", count, 2).fields_grouping("split", Fields("word"))
    conf = Config()
    conf.set_max_spout_pending(pending)
    if interval_ms is not None:
        redis_state(conf, prefix, interval_ms)
    result, name = run_counted(engine, builder, conf, "interval", len(sentences))
    stats = result.stats
    tuples = stats["split"]["executed"] + stats["count"]["executed"]
    store = open_store("redis", {"url": "redis://127.0.0.1:6379/0", "key_prefix": prefix}, name)
    return {
        "tps": tuples / result.elapsed_secs,
        "p50": stats["sentences"]["complete_latency_p50_ms"],
        "p99": stats["sentences"]["complete_latency_p99_ms"],
        "checkpoints": store.committed_txid() + 1 if interval_ms is not None else 0,
    }


class ColumnCount(StatefulArrowBolt):
    """docs/arrow.md's count in columns: each word of a batch once, read and written in
    one call each; emits each word's new count, then acks the batch."""

    def prepare(self, conf: dict, context: object, collector: object) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute_batch(self, batch: pa.RecordBatch) -> None:
        tally = pc.value_counts(batch.column(0))
        words, seen = tally.field("values"), tally.field("counts").to_pylist()
        totals = [n + k for n, k in zip(self.counts.get_many(words, 0), seen, strict=True)]
        self.counts.put_many(words, totals)
        out = pa.record_batch([words, pa.array(totals)], names=["word", "count"])
        self.collector.emit_batch(out)  # type: ignore[attr-defined]
        self.collector.ack_batch(batch)  # type: ignore[attr-defined]

    def declare_output_fields(self, declarer: object) -> None:
        declarer.declare(Fields("word", "count"))  # type: ignore[attr-defined]


def stateful_counts(
    engine: str, sentences: list[str], interval_ms: int, prefix: str, columns: bool
) -> float:
    """Tuples/s (sentences split plus words counted) of one stateful word count run."""
    builder = TopologyBuilder()
    if columns:
        builder.set_spout("sentences", arrow_word_count.SentenceBatches(sentences))
        builder.set_bolt("split", arrow_word_count.Split(), 2).shuffle_grouping("sentences")
        count: object = ColumnCount()
    else:
        builder.set_spout("sentences", SentenceSpout(sentences))
        builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
        count = StatefulWordCount()
    builder.set_bolt("count", count, 2).fields_grouping("split", Fields("word"))
    conf = Config()
    redis_state(conf, prefix, interval_ms)
    result, _ = run_counted(engine, builder, conf, "columns", len(sentences))
    words = sum(len(s.split()) for s in sentences)
    return (len(sentences) + words) / result.elapsed_secs


def columns_against_tuples(engine: str, interval_ms: int, rounds: int = 3) -> list[str]:
    """The table of the stateful count in columns against tuples, side by side."""
    sentences = generated_sentences(SENTENCES)
    figures: dict[bool, list[float]] = {False: [], True: []}
    with redis_prefix() as prefix:
        for columns in (False, True):  # warm-up: imports, Spark's first jobs
            stateful_counts(engine, generated_sentences(5000, seed=1), interval_ms, prefix, columns)
        for _ in range(rounds):
            for columns in (False, True):
                figures[columns].append(
                    stateful_counts(engine, sentences, interval_ms, prefix, columns)
                )
    tuples, arrow = statistics.median(figures[False]), statistics.median(figures[True])
    return [
        "",
        f"Stateful word count on the {engine} engine, {SENTENCES:,} sentences of 8 words, "
        f"the count's state on Redis, checkpoint every {interval_ms:,} ms, every sentence "
        f"tracked (median of {rounds} interleaved rounds)",
        "",
        "| count | tuples/s | vs tuples |",
        "|---|---|---|",
        f"| StatefulBolt (tuples) | {tuples:,.0f} | 1.00x |",
        f"| StatefulArrowBolt (columns) | {arrow:,.0f} | {arrow / tuples:.2f}x |",
    ]


def against_interval(engine: str, intervals: list[int]) -> list[str]:
    """The table of end-to-end throughput and latency per checkpoint interval."""
    sentences = generated_sentences(SENTENCES)
    lines = [
        "",
        f"Word count on the {engine} engine, {SENTENCES:,} sentences of 8 words, the count in "
        "a StatefulBolt (Redis) against the checkpoint interval",
        "",
        "| max spout pending | count kept in | interval | tuples/s | vs plain | p50 ms | "
        "p99 ms | checkpoints |",
        "|---|---|---|---|---|---|---|---|",
    ]
    with redis_prefix() as prefix:
        word_count(engine, generated_sentences(2000, seed=1), None, prefix, None)  # warm up
        for pending in (None, PENDING):
            shown = "none" if pending is None else f"{pending:,}"
            plain = word_count(engine, sentences, None, prefix, pending)
            lines.append(
                f"| {shown} | attributes (plain) | - | {plain['tps']:,.0f} | 1.00x | "
                f"{plain['p50']:,.0f} | {plain['p99']:,.0f} | - |"
            )
            # capped, throughput is at most pending / interval: two intervals show it
            for interval in intervals if pending is None else intervals[:2]:
                row = word_count(engine, sentences, interval, prefix, pending)
                lines.append(
                    f"| {shown} | KeyValueState | {interval:,} ms | {row['tps']:,.0f} | "
                    f"{row['tps'] / plain['tps']:.2f}x | {row['p50']:,.0f} | "
                    f"{row['p99']:,.0f} | {row['checkpoints']} |"
                )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--changed", type=int, default=1000)
    parser.add_argument("--intervals", default="100,300,1000,3000")
    parser.add_argument("--engine", default="local", choices=["local", "spark", "continuous"])
    parser.add_argument("--save", action="store_true")
    parser.add_argument("--columns", type=int, metavar="INTERVAL_MS", default=None)
    args = parser.parse_args()
    if args.columns is not None:
        lines = columns_against_tuples(args.engine, args.columns)
        report(f"state-columns-{args.engine}", lines, args.save)
        return
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else []
    intervals = [int(i) for i in args.intervals.split(",")] if args.intervals else []
    lines = measure(sizes, args.changed) if sizes else []
    if intervals:
        lines += against_interval(args.engine, intervals)
    report("state" if args.engine == "local" else f"state-{args.engine}", lines, args.save)


if __name__ == "__main__":
    main()
