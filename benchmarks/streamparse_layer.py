"""What streamparse's classes cost on sparkstorm: the same word count written both ways.

    python -m benchmarks.streamparse_layer [--words N] [--rounds R]

streamparse's quickstart (a spout of words, a bolt counting them, fields-grouped) as
streamparse classes (``sparkstorm.streamparse``: ``Spout`` and ``Bolt`` with
``process``, auto-ack and auto-anchor) and as plain sparkstorm components doing the
same work. The spouts emit N words once each, tracked, so every tuple's tree is acked;
both run on the local engine until idle, in alternate rounds, in this process. Reported:
CPU microseconds per word (the spout's emit, the bolt's execute, acking) and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from typing import Any

from sparkstorm import Bolt, Fields, Spout, TopologyBuilder, run
from sparkstorm import streamparse as sp

WORDS = ["dog", "cat", "zebra", "elephant"]


class NativeWords(Spout):
    def __init__(self, n: int) -> None:
        self.n = n

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector, self.i = collector, 0

    def next_tuple(self) -> None:
        if self.i < self.n:
            self.collector.emit([WORDS[self.i % 4]], self.i)
            self.i += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word"))


class NativeCount(Bolt):
    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector, self.counter = collector, Counter()

    def execute(self, tup: Any) -> None:
        word = tup[0]
        self.counter[word] += 10 if word == "dog" else 1
        self.collector.emit([word, self.counter[word]], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


class StreamparseWords(sp.Spout):
    outputs = ("word",)
    total = 0

    def initialize(self, stormconf: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < self.total:
            self.emit([WORDS[self.i % 4]], tup_id=self.i)
            self.i += 1


class StreamparseCount(sp.Bolt):
    outputs = ("word", "count")

    def initialize(self, conf: dict[str, Any], ctx: Any) -> None:
        self.counter: Counter[str] = Counter()

    def process(self, tup: Any) -> None:
        word = tup.values[0]
        self.counter[word] += 10 if word == "dog" else 1
        self.emit([word, self.counter[word]])


def one_run(kind: str, n: int) -> float:
    """CPU microseconds per word of one run."""
    builder = TopologyBuilder()
    if kind == "native":
        builder.set_spout("words", NativeWords(n))
        count: Any = NativeCount()
    else:
        spout = StreamparseWords()
        spout.total = n
        builder.set_spout("words", spout)
        count = StreamparseCount()
    builder.set_bolt("count", count, 2).fields_grouping("words", Fields("word"))
    before = time.process_time()
    result = run(builder.create_topology(), {}, "local", until_idle=True, api=False)
    cpu = time.process_time() - before
    assert result.stats["words"]["acked"] == n, result.stats["words"]
    return cpu / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    figures: dict[str, list[float]] = {"native": [], "streamparse": []}
    for _ in range(args.rounds):
        for kind, found in figures.items():
            found.append(one_run(kind, args.words))
            print(f"{kind}: {found[-1]:.3f} us/word", flush=True)
    native, layer = (statistics.median(figures[k]) for k in ("native", "streamparse"))
    print(
        f"word count, {args.words:,} tracked words, local engine, median of {args.rounds}: "
        f"native {native:.3f} us/word, streamparse classes {layer:.3f} us/word, "
        f"streamparse/native {layer / native:.2f}"
    )


if __name__ == "__main__":
    main()
