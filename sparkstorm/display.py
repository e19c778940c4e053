"""Terminal display of per-component statistics (Storm UI's columns), with rich."""

from __future__ import annotations

from typing import Any

from rich.table import Table

COLUMNS = [
    ("emitted", "Emitted"),
    ("transferred", "Transferred"),
    ("executed", "Executed"),
    ("execute_latency_ms", "Exec lat (ms)"),
    ("acked", "Acked"),
    ("failed", "Failed"),
    ("complete_latency_ms", "Complete lat (ms)"),
]


def stats_table(stats: dict[str, dict[str, Any]], title: str) -> Table:
    """A table with one row per component, ``__acker`` last."""
    table = Table(title=title, title_justify="left")
    table.add_column("Component")
    table.add_column("Tasks", justify="right")
    for _, header in COLUMNS:
        table.add_column(header, justify="right")
    table.add_column("Failed by reason")
    for component in sorted(stats, key=lambda c: (c.startswith("__"), c)):
        row = stats[component]
        cells = []
        for key, _ in COLUMNS:
            value = row.get(key, 0)
            cells.append(f"{value:,.2f}" if isinstance(value, float) else f"{value:,}")
        reasons = ", ".join(f"{k}: {v:,}" for k, v in sorted(row["fail_reasons"].items()))
        table.add_row(component, str(row["tasks"]), *cells, reasons)
    return table
