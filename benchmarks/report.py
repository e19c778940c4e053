"""Print a benchmark's table with the machine line; with ``save``, write it to docs/benchmarks/."""

from __future__ import annotations

from pathlib import Path

from benchmarks.machine import machine


def report(name: str, lines: list[str], save: bool) -> None:
    """Print ``lines`` and the machine; with ``save`` also write docs/benchmarks/NAME.txt."""
    text = "\n".join([*lines, machine()]) + "\n"
    print(text, end="")
    if save:
        out = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / f"{name}.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
