"""What one failure costs a stateful topology, by kind: replayed messages and time.

    python -m benchmarks.failure_cost [--sentences N] [--failures F] [--engine local]

A word count whose count is a ``StatefulBolt`` (a directory store, checkpoints every
100 ms, ``topology.max.spout.pending`` 1,000, message timeout 3 s) over N numbered
sentences, once without failures and once per kind with the first attempt of F
sentences failing:

- ``upstream``: ``split`` fails the sentence before emitting (no state touched);
- ``stateful``: ``count`` fails a word of it after counting it (a rollback, aimed: the
  sentence fails as ``explicit``, the other pending messages with ``rollback``);
- ``timeout``: ``split`` emits the words (counted) and never acks the sentence, so its
  spout times it out (a rollback: the effect may be in uncommitted state).

Reported per kind: seconds, sentences/s against the run without failures, and per injected
failure the messages failed with ``rollback`` (replayed without an attempt counted) and
how many times each kind's sentences failed as their own. Every row checks that every
sentence was acked once and the committed counts are exact.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections import Counter
from typing import Any

from benchmarks.modes import engine_for
from benchmarks.report import report
from examples.word_count import generated_sentences
from sparkstorm import Bolt, Fields, Spout, StatefulBolt, TopologyBuilder, run
from sparkstorm.state import read_committed_state

KINDS = ("none", "upstream", "stateful", "timeout")


class Numbered(Spout):
    """Emits numbered sentences with their attempt; replays a failure at the end."""

    def __init__(self, sentences: list[str]) -> None:
        self.sentences = sentences

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector, self.queue = collector, list(range(len(self.sentences)))
        self.attempts: Counter[int] = Counter()

    def next_tuple(self) -> None:
        if self.queue:
            n = self.queue.pop()
            self.collector.emit([n, self.sentences[n], self.attempts[n]], msg_id=n)

    def fail(self, msg_id: int, reason: Any = None) -> None:
        self.attempts[msg_id] += 1
        self.queue.insert(0, msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("n", "sentence", "attempt"))


class Split(Bolt):
    def __init__(self, kind: str, injected: frozenset[int]) -> None:
        self.kind, self.injected = kind, injected

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        n, sentence, attempt = tup.values
        first_injected = attempt == 0 and n in self.injected
        if first_injected and self.kind == "upstream":
            self.collector.fail(tup)
            return
        for word in sentence.split():
            self.collector.emit([word, n, attempt], anchors=tup)
        if not (first_injected and self.kind == "timeout"):
            self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "n", "attempt"))


class Count(StatefulBolt):
    def __init__(self, kind: str, injected: frozenset[int]) -> None:
        self.kind, self.injected = kind, injected

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.counts = state

    def execute(self, tup: Any) -> None:
        word, n, attempt = tup.values
        self.counts.put(word, self.counts.get(word, 0) + 1)
        if self.kind == "stateful" and attempt == 0 and n in self.injected:
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def one_run(
    engine: str, kind: str, sentences: list[str], failures: int, folder: str, spark: Any = None
) -> dict:
    step = max(1, len(sentences) // (failures + 1))
    injected = (
        frozenset(range(step, step * (failures + 1), step)) if kind != "none" else frozenset()
    )
    builder = TopologyBuilder()
    builder.set_spout("sentences", Numbered(sentences))
    builder.set_bolt("split", Split(kind, injected), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", Count(kind, injected), 2).fields_grouping("split", Fields("word"))
    name = f"cost-{uuid.uuid4().hex[:8]}"
    conf: dict[str, Any] = {
        "topology.state.provider": "directory",
        "topology.state.provider.config": {"path": folder},
        "topology.state.checkpoint.interval.ms": 100,
        "topology.max.spout.pending": 1000,
        "topology.message.timeout.secs": 3,
    }
    engine = engine_for(engine, conf)
    started = time.perf_counter()
    result = run(builder.create_topology(), conf, engine, spark, name=name, until_idle=True)
    secs = time.perf_counter() - started
    spout = result.stats["sentences"]
    assert spout["acked"] == len(sentences), spout
    exact = Counter(word for sentence in sentences for word in sentence.split())
    assert read_committed_state(name, conf).of("count") == dict(exact), "counts not exact"
    reasons = spout["fail_reasons"]
    return {
        "secs": secs,
        "sentences_per_sec": len(sentences) / secs,
        "rollback": reasons.get("rollback", 0),
        "own": sum(n for k, n in reasons.items() if k != "rollback"),
        "injected": len(injected),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=20_000)
    parser.add_argument("--failures", type=int, default=5)
    parser.add_argument("--engine", default="local", choices=["local", "spark", "continuous"])
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    sentences = generated_sentences(args.sentences)
    lines = [
        f"What a failure costs a stateful word count ({args.engine}, {args.sentences:,} "
        f"sentences, {args.failures} injected failures of each kind, checkpoints every "
        "100 ms, max spout pending 1,000)",
        "",
        "| failure | seconds | sentences/s vs none | own failures | replayed per failure |",
        "|---|---|---|---|---|",
    ]
    spark = None
    if args.engine != "local":  # started and warmed before anything is timed
        from benchmarks.wordcount import warmed_session

        spark, startup = warmed_session()
        lines.insert(1, f"(Spark started in {startup:.1f} s, before the runs)")
    with tempfile.TemporaryDirectory() as folder:
        one_run(args.engine, "none", sentences[:2000], 0, folder, spark)  # warm-up, not shown
        rows = {
            kind: one_run(args.engine, kind, sentences, args.failures, folder, spark)
            for kind in KINDS
        }
    base = rows["none"]["sentences_per_sec"]
    for kind, row in rows.items():
        per = row["rollback"] / row["injected"] if row["injected"] else 0.0
        lines.append(
            f"| {kind} | {row['secs']:.1f} | {row['sentences_per_sec'] / base:.2f} | "
            f"{row['own']} | {per:,.0f} |"
        )
    report(f"failure_cost_{args.engine}", lines, args.save)


if __name__ == "__main__":
    main()
