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
