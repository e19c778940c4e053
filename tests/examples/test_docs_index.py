"""A reader finds every guide from the README and from docs/ (issue 67, item 3), and
every relative link in them leads somewhere."""

from __future__ import annotations

import re

import pytest

from tests.run_process import ROOT

GUIDES = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md")
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def linked(page: str) -> set[str]:
    """The files ``page`` links to, by their path from the repository root."""
    path = ROOT / page
    found = set()
    for target, _ in LINK.findall(path.read_text()):
        if "://" not in target:
            found.add(str((path.parent / target).resolve().relative_to(ROOT)))
    return found


@pytest.mark.parametrize(
    ("page", "leaves_out"),
    [
        ("README.md", set()),
        ("docs/README.md", set()),
        ("docs/getting-started.md", {"getting-started.md"}),
    ],
)
def test_every_guide_is_linked_from_the_readme_the_index_and_getting_started(page, leaves_out):
    missing = {f"docs/{g}" for g in GUIDES if g not in leaves_out} - linked(page)
    assert not missing, f"{page} does not link {sorted(missing)}"


def test_every_relative_link_of_the_docs_leads_to_a_file():
    pages = ["README.md", *(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
    broken = [
        (page, target) for page in pages for target in linked(page) if not (ROOT / target).exists()
    ]
    assert not broken, broken


def test_the_columns_figures_in_the_prose_are_the_saved_benchmark_outputs():
    """Issue 67, item 2: the prose said 1.2x and 4.1x where the tables beside it said
    1.41x and 4.46x. The saved output (python -m benchmarks.arrow --save) is the one
    source: the prose must quote its first table's continuous row."""
    saved = (ROOT / "docs" / "benchmarks" / "arrow.txt").read_text()
    row = next(line for line in saved.splitlines() if line.startswith("arrow, continuous "))
    pyspark, streaming = row.split()[-4:-2]
    for page in ("README.md", "docs/arrow.md"):
        text = re.sub(r"\s+", " ", (ROOT / page).read_text())
        assert f"{pyspark}x the fastest PySpark" in text, (page, pyspark)
        assert f"{streaming}x Structured Streaming" in text, (page, streaming)
