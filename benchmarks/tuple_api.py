"""Storm's tuple API against the Python dataflow a user would pick instead (issue 68).

    pip install bytewax==0.21.1   # the baseline; not a dependency of sparkstorm
    python -m benchmarks.tuple_api [--sentences 200000] [--rounds 3] [--save]

The textbook word count, side by side in one process, each side warmed alike (a first
run of each, untimed; then ``--rounds`` interleaved rounds, medians): a spout emitting
one sentence a ``next_tuple`` with its index as msg id, ``SplitSentence`` anchoring each
word and acking, a ``BasicBolt`` count, fields grouping, acking on, defaults
(``examples/word_count.py``). Tuples are sentences split plus words counted (9 a
sentence). Rows:

- the floors: a plain Python loop (split, count); the same loop with Storm's XOR
  acking inline (a random id a tuple, XOR-ed into its tree's entry, the tree settled
  when it comes back to zero): what the guarantee costs with no engine at all; and the
  example's own bolts called in a loop through Storm's API (``execute``, ``emit``,
  ``ack``, one Python call each) with no engine: what any engine keeping that API in
  CPython pays per tuple before it does anything of its own;
- Bytewax as its own word count is written (``flat_map`` split, ``count_final``), 1
  worker and 2, its input in batches of 1,000; and with a count emitted for every word
  (``stateful_map``), as the topology's count bolt does;
- sparkstorm: the local engine, and the continuous mode on ``local[2]`` (the session
  started and warmed before anything is timed, as a user's notebook would have it).

Each row is timed as the user times it, the whole call (``run(...)``, ``run_main``);
sparkstorm's steady rate (tuples over ``elapsed_secs``, which leaves out the topology's
start-up and end) is beside it, labelled.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks.api_floor import api_floor
from benchmarks.modes import engine_for
from benchmarks.report import report
from examples.word_count import build, count_word, generated_sentences, split_sentence
from sparkstorm import run


def plain_loop(sentences: list[str]) -> dict[str, float]:
    """Split and count, nothing else."""
    counts: dict[str, int] = {}
    started = time.perf_counter()
    for sentence in sentences:
        for word in split_sentence(sentence):
            count_word(counts, word)
    return {"whole": time.perf_counter() - started}


def inline_acking(sentences: list[str]) -> dict[str, float]:
    """The loop with Storm's XOR acking inline: every tuple an id, every tree settled."""
    getrandbits = __import__("random").getrandbits
    counts: dict[str, int] = {}
    pending: dict[int, int] = {}
    acked = 0
    started = time.perf_counter()
    for root, sentence in enumerate(sentences):
        sentence_id = getrandbits(64)
        pending[root] = sentence_id
        for word in split_sentence(sentence):
            word_id = getrandbits(64)
            pending[root] ^= word_id  # anchored: the new tuple joins the tree
            count_word(counts, word)
            pending[root] ^= word_id  # the count bolt acks the word
        pending[root] ^= sentence_id  # the split bolt acks the sentence
        if pending[root] == 0:
            del pending[root]
            acked += 1
    assert acked == len(sentences) and not pending
    return {"whole": time.perf_counter() - started}


def bolt_api(sentences: list[str]) -> dict[str, float]:
    """The example's own bolts called in a loop, no engine (``benchmarks/api_floor.py``)."""
    started = time.perf_counter()
    api_floor(sentences)
    return {"whole": time.perf_counter() - started}


def bytewax_run(sentences: list[str], workers: int, each: bool = False) -> dict[str, float]:
    """The word count as a Bytewax dataflow, on ``workers`` worker threads.

    As Bytewax's own word count writes it (``count_final``: one count a word, at the
    end), or with ``each`` a count emitted for every word, as the topology's bolt does.
    """
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.testing import TestingSink, TestingSource, cluster_main, run_main

    def counted(state: int | None, word: str) -> tuple[int, tuple[str, int]]:
        count = (state or 0) + 1
        return count, (word, count)

    out: list[Any] = []
    flow = Dataflow("word_count")
    lines = op.input("sentences", flow, TestingSource(sentences, batch_size=1000))
    words = op.flat_map("split", lines, split_sentence)
    if each:
        keyed = op.key_on("by_word", words, lambda word: word)
        op.output("out", op.stateful_map("count", keyed, counted), TestingSink(out))
    else:
        op.output("out", op.count_final("count", words, lambda word: word), TestingSink(out))
    started = time.perf_counter()
    if workers == 1:
        run_main(flow)
    else:
        cluster_main(flow, [], 0, worker_count_per_proc=workers)
    whole = time.perf_counter() - started
    words_in = sum(len(split_sentence(s)) for s in sentences)
    assert (len(out) if each else sum(n for _, n in out)) == words_in, len(out)
    return {"whole": whole}


def sparkstorm_run(sentences: list[str], row: str, spark: Any) -> dict[str, float]:
    """``examples/word_count.py``'s topology at its defaults, on ``row``'s engine."""
    topology, conf = build(sentences)
    engine = engine_for(row, conf)
    started = time.perf_counter()
    result = run(topology, conf, engine=engine, spark=spark if engine == "spark" else None)
    whole = time.perf_counter() - started
    stats = result.stats
    assert stats["sentences"]["acked"] == len(sentences), stats["sentences"]
    return {"whole": whole, "elapsed": result.elapsed_secs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from benchmarks.wordcount import warmed_session

    spark, _ = warmed_session()
    sentences = generated_sentences(args.sentences)
    tuples = len(sentences) + sum(len(split_sentence(s)) for s in sentences)
    rows: list[tuple[str, Callable[[], dict[str, float]]]] = [
        ("plain Python loop (floor)", lambda: plain_loop(sentences)),
        ("the loop with inline XOR acking (floor)", lambda: inline_acking(sentences)),
        ("Storm's bolt API alone, no engine (floor)", lambda: bolt_api(sentences)),
        ("Bytewax, 1 worker", lambda: bytewax_run(sentences, 1)),
        ("Bytewax, 2 workers", lambda: bytewax_run(sentences, 2)),
        ("Bytewax, 2 workers, a count emitted a word", lambda: bytewax_run(sentences, 2, True)),
        ("sparkstorm local", lambda: sparkstorm_run(sentences, "local", spark)),
        ("sparkstorm continuous, local[2]", lambda: sparkstorm_run(sentences, "continuous", spark)),
    ]
    for _, call in rows:  # warmed alike: every side once, untimed
        call()
    seen: dict[str, list[dict[str, float]]] = {name: [] for name, _ in rows}
    for _ in range(args.rounds):
        for name, call in rows:
            seen[name].append(call())
    bytewax = statistics.median(r["whole"] for r in seen["Bytewax, 2 workers"])
    lines = [
        f"The textbook word count, {len(sentences):,} sentences ({tuples:,} tuples), acking "
        f"on, defaults; medians of {args.rounds} interleaved rounds after a warm-up of each",
        "",
        "| row | tuples/s, whole call | vs Bytewax 2 workers | steady rate (elapsed only) |",
        "|---|---|---|---|",
    ]
    for name, _ in rows:
        whole = statistics.median(r["whole"] for r in seen[name])
        elapsed = [r["elapsed"] for r in seen[name] if "elapsed" in r]
        steady = f"{tuples / statistics.median(elapsed):,.0f}" if elapsed else "-"
        lines.append(f"| {name} | {tuples / whole:,.0f} | {bytewax / whole:.2f}x | {steady} |")
    report("tuple_api", lines, args.save)


if __name__ == "__main__":
    main()
