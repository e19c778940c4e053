"""A change's cost per tuple: this tree against another checkout, side by side.

    git clone -q . /tmp/base && git -C /tmp/base checkout BASE_COMMIT
    python -m benchmarks.versus /tmp/base [--sentences N] [--rounds R] [--engine E]

Runs the word count (acking on, defaults otherwise) in a fresh process per run, from each
tree in turn (``PYTHONPATH`` picks the tree, for the Spark workers too), ``--rounds``
times, interleaved, and prints CPU microseconds per tuple (the process tree's user +
system, start-up excluded: it is measured around ``run`` only) and their medians' ratio.
The local engine (the default) has no Spark noise, so a per-emit change of tens of
nanoseconds shows; ``--engine continuous`` or ``superstep`` measures a Spark mode.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

ONE_RUN = """
import sys, time
from benchmarks.cpu_budget import cpu_snapshot, cpu_used
from examples.word_count import build, generated_sentences
from sparkstorm import run
engine, n = sys.argv[1], int(sys.argv[2])
topology, conf = build(generated_sentences(n))
spark = None
if engine != "local":
    conf["sparkstorm.spark.mode"] = engine
    from benchmarks.wordcount import warmed_session
    spark, _ = warmed_session()
before = cpu_snapshot()
result = run(topology, conf, "local" if engine == "local" else "spark", spark, until_idle=True)
cpu = sum(cpu_used(before, cpu_snapshot()).values())
tuples = result.stats["split"]["executed"] + result.stats["count"]["executed"]
assert result.stats["sentences"]["acked"] == n, result.stats["sentences"]
print(cpu / tuples * 1e6)
"""


def one_run(tree: Path, engine: str, sentences: int) -> float:
    """CPU microseconds per tuple of one word count run from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", ONE_RUN, engine, str(sentences)],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path, help="the other checkout")
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--engine", choices=["local", "continuous", "superstep"], default="local")
    args = parser.parse_args()
    trees = {"base": args.base.resolve(), "this": HERE}
    figures: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            figures[name].append(one_run(tree, args.engine, args.sentences))
            print(f"{name}: {figures[name][-1]:.3f} us/tuple", flush=True)
    base, this = (statistics.median(figures[name]) for name in trees)
    print(
        f"{args.engine} word count, {args.sentences:,} sentences, median of {args.rounds}: "
        f"base {base:.3f} us/tuple, this {this:.3f} us/tuple, this/base {this / base:.3f}"
    )


if __name__ == "__main__":
    main()
