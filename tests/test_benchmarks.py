"""The benchmark command's parts run and report every configuration (tiny sizes)."""

from __future__ import annotations

import pytest

from benchmarks import report, scaling


@pytest.mark.spark
def test_scaling_sweep_reports_every_configuration_and_plots(spark, tmp_path):
    lines, points = scaling.measure(spark, [300, 600])
    labels = {label for label, _, _ in scaling.configurations()}
    labels |= {"plain PySpark", "PySpark, JVM count"}
    assert set(points) == labels
    for series in points.values():
        assert [size for size, _ in series] == [300, 600]
        assert all(tps > 0 for _, tps in series)
    rows = [line for line in lines if "acking on, 4 tasks/bolt" in line]
    assert len(rows) == 2 and all("%" in row for row in rows)  # the profile breakdown
    scaling.plot(points, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:4] == b"\x89PNG"


def test_results_section_is_replaced_and_the_rest_kept(tmp_path, monkeypatch):
    page = tmp_path / "benchmarks.md"
    page.write_text(f"# Title\nintro\n{report.BEGIN}\nold table\n{report.END}\noutro\n")
    monkeypatch.setattr(report, "PAGE", page)
    report.write_results_section({"acker": ["new line 1", "new line 2"]})
    text = page.read_text()
    assert "old table" not in text
    assert text.startswith("# Title\nintro\n") and text.endswith("outro\n")
    assert "new line 1\nnew line 2" in text and text.count(report.BEGIN) == 1
