"""Print a benchmark's table with the machine line; with ``save``, write it to docs/."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.machine import machine

DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks"
"""Where saved tables and plots go."""
PAGE = DOCS.parent / "benchmarks.md"
BEGIN = "<!-- results: written by `python -m benchmarks --save`; do not edit by hand -->"
END = "<!-- end of results -->"


def report(name: str, lines: list[str], save: bool) -> None:
    """Print ``lines`` and the machine; with ``save`` also write docs/benchmarks/NAME.txt."""
    text = "\n".join([*lines, machine()]) + "\n"
    print(text, end="")
    if save:
        DOCS.mkdir(parents=True, exist_ok=True)
        (DOCS / f"{name}.txt").write_text(text)


def write_results_section(tables: dict[str, list[str]]) -> None:
    """Replace the results section of docs/benchmarks.md with these tables and the plot."""
    titles = {
        "wordcount": "Word count: engines, acking on and off, plain PySpark",
        "scaling": "Scaling: size and tasks per bolt, and where the time goes",
        "latency": "Latency against throughput: steady offered rates",
        "acker": "The acker: memory per pending tree, throughput",
    }
    parts = [BEGIN, "", f"Latest run: {machine().removeprefix('machine: ')}.", ""]
    for name, lines in tables.items():
        parts += [f"### {titles.get(name, name)}", "", "```", *lines, "```", ""]
        if name == "scaling":
            parts += ["![throughput against size](benchmarks/scaling.png)", ""]
        if name == "latency":
            parts += ["![latency against throughput](benchmarks/latency.png)", ""]
    parts.append(END)
    page = PAGE.read_text()
    head, found, rest = page.partition(BEGIN)
    if not found:
        msg = f"{PAGE} has no results section; add the line {BEGIN!r} and {END!r}"
        raise SystemExit(msg)
    tail = rest.partition(END)[2]
    PAGE.write_text(head + "\n".join(parts) + tail)


@contextmanager
def figure(path: Path, title: str, xlabel: str, ylabel: str) -> Iterator[Any]:
    """Axes to draw on; on leaving, labelled, gridded and saved to ``path`` as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=110)
    try:
        yield ax
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
