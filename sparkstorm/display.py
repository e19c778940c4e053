"""Terminal display of per-component statistics (Storm UI's columns), with rich.

Spouts and bolts get a table each, with the columns Storm UI shows for them; the JSON
statistics (``--stats-json``) hold every counter of every component.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table

SPOUT_COLUMNS = [
    ("emitted", "Emitted"),
    ("transferred", "Xferred"),
    ("pending", "Pending"),
    ("acked", "Acked"),
    ("failed", "Failed"),
    ("complete_latency_ms", "Cmpl ms"),
    ("complete_latency_p99_ms", "p99 ms"),
]
BOLT_COLUMNS = [
    ("executed", "Executed"),
    ("execute_latency_ms", "Exec ms"),
    ("process_latency_ms", "Proc ms"),
    ("capacity", "Cap"),
    ("emitted", "Emitted"),
    ("acked", "Acked"),
    ("failed", "Failed"),
]
STATE_COLUMNS = [("state_bytes", "State B"), ("snapshot_bytes_per_superstep", "Snap B/step")]
"""Shown when some bolt's state is snapshotted (the Spark engine's, between supersteps)."""

MEAN_OVER = {
    "complete_latency_ms": "acked",
    "complete_latency_p99_ms": "acked",
    "execute_latency_ms": "executed",
    "process_latency_ms": "acked",
}
"""A mean is shown as ``-`` until the count it is taken over is above 0."""


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if value < 10 else f"{value:,.0f}"
    return f"{value:,}"


def _table(
    title: str,
    columns: list[tuple[str, str]],
    rows: list[tuple[str, dict[str, Any]]],
    reasons: bool,
) -> Table:
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1)
    )
    table.add_column("Component", no_wrap=True)
    for _, header in columns:
        table.add_column(header, justify="right", no_wrap=True)
    if reasons:
        table.add_column("Fail reasons")
    for component, row in rows:
        cells = [
            _cell(None if key in MEAN_OVER and not row.get(MEAN_OVER[key]) else row.get(key))
            for key, _ in columns
        ]
        if reasons:
            cells.append(", ".join(f"{k} {v:,}" for k, v in sorted(row["fail_reasons"].items())))
        table.add_row(component, *cells)
    return table


def _batch(spouts: list[tuple[str, dict[str, Any]]]) -> str:
    """The spout batch, one for the topology: ``next_tuple`` calls per task and superstep."""
    batches = {row["spout_batch"] for _, row in spouts if row.get("spout_batch")}
    return f"  (batch {max(batches):,} calls per task and superstep)" if batches else ""


def stats_table(stats: dict[str, dict[str, Any]], title: str) -> Group:
    """The spouts' table, then the bolts' (``__acker`` last), under ``title``."""
    spouts = sorted((c, r) for c, r in stats.items() if r.get("kind") == "spout")
    bolts = sorted((c, r) for c, r in stats.items() if r.get("kind") == "bolt")
    bolts += [(c, r) for c, r in stats.items() if r.get("kind") == "acker"]
    state = STATE_COLUMNS if any(r.get("snapshots") for _, r in bolts) else []
    return Group(
        _table(
            f"{title}\nSpouts" + _batch(spouts),
            SPOUT_COLUMNS,
            spouts,
            reasons=any(r.get("fail_reasons") for _, r in spouts),
        ),
        _table("Bolts", BOLT_COLUMNS + state, bolts, reasons=False),
    )
