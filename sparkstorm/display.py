"""Terminal display of per-component statistics (Storm UI's columns), with rich.

Spouts and bolts get a table each, with the columns Storm UI shows for them; the JSON
statistics (``--stats-json``) hold every counter of every component. In a terminal too
narrow for every column, the least needed go first (as ``top`` does), so what is shown
is never cut: ``DROP_FIRST`` says in which order.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from sparkstorm.control.api_views import trident_batches

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

DROP_FIRST = [
    "snapshot_bytes_per_superstep",
    "state_bytes",
    "transferred",
    "process_latency_ms",
    "complete_latency_p99_ms",
    "emitted",
    "execute_latency_ms",
    "complete_latency_ms",
]
"""The columns a narrow terminal loses, first to last; the counts and capacity stay."""

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
    width: int | None = None,
) -> Table:
    cells = {
        component: [
            _cell(None if key in MEAN_OVER and not row.get(MEAN_OVER[key]) else row.get(key))
            for key, _ in columns
        ]
        for component, row in rows
    }
    why = {
        c: ", ".join(f"{k} {v:,}" for k, v in sorted(r["fail_reasons"].items())) for c, r in rows
    }
    shown = _fitting(columns, cells, why if reasons else None, width)
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1)
    )
    table.add_column("Component", no_wrap=True)
    for i in shown:
        table.add_column(columns[i][1], justify="right", no_wrap=True)
    if reasons:
        table.add_column("Fail reasons")
    for component, _ in rows:
        row_cells = [cells[component][i] for i in shown]
        table.add_row(component, *row_cells, *([why[component]] if reasons else []))
    return table


def _fitting(
    columns: list[tuple[str, str]],
    cells: dict[str, list[str]],
    reasons: dict[str, str] | None,
    width: int | None,
) -> list[int]:
    """The indexes of ``columns`` to show in ``width`` characters (all when it is None)."""
    shown = list(range(len(columns)))
    if width is None:
        return shown

    def needed(i: int) -> int:  # its widest cell, a space each side and the divider
        return max([len(columns[i][1]), *(len(row[i]) for row in cells.values())]) + 3

    fixed = max([len("Component"), *map(len, cells)]) + 1  # the table's edges: 2 less
    if reasons is not None:
        fixed += max([len("Fail reasons"), *map(len, reasons.values())]) + 3
    for key in DROP_FIRST:
        if fixed + sum(needed(i) for i in shown) < width:  # rich keeps the last column free
            break
        shown = [i for i in shown if columns[i][0] != key]
    return shown


def _batch(spouts: list[tuple[str, dict[str, Any]]]) -> str:
    """The spout batch, one for the topology: ``next_tuple`` calls per task and superstep."""
    batches = {row["spout_batch"] for _, row in spouts if row.get("spout_batch")}
    return f"  (batch {max(batches):,} calls per task and superstep)" if batches else ""


def stats_table(stats: dict[str, dict[str, Any]], title: str, width: int | None = None) -> Group:
    """The spouts' table, then the bolts' (``__acker`` last), under ``title``.

    With ``width`` (the terminal's), columns are left out, least needed first, until
    the tables fit.
    """
    spouts = sorted((c, r) for c, r in stats.items() if r.get("kind") == "spout")
    bolts = sorted((c, r) for c, r in stats.items() if r.get("kind") == "bolt")
    bolts += [(c, r) for c, r in stats.items() if r.get("kind") == "acker"]
    state = STATE_COLUMNS if any(r.get("snapshots") for _, r in bolts) else []
    tables: list[Table | Text] = [
        _table(
            f"{title}\nSpouts" + _batch(spouts),
            SPOUT_COLUMNS,
            spouts,
            reasons=any(r.get("fail_reasons") for _, r in spouts),
            width=width,
        ),
        _table("Bolts", BOLT_COLUMNS + state, bolts, reasons=False, width=width),
    ]
    batches = trident_batches(stats)
    if batches is not None:
        tables.append(Text(trident_line(batches)))
    return Group(*tables)


def trident_line(b: dict[str, Any]) -> str:
    """A Trident topology's batches in one line, under the tables."""
    line = (
        f"Trident: txid {b['committedTxid']:,} committed ({b['committedBatches']:,} with "
        f"tuples), {b['inFlight']} in flight; {b['batchTuples']:,.0f} tuples a batch; processing "
        f"p50 {b['processingMsP50']:g} ms (p99 {b['processingMsP99']:g}), commit p50 "
        f"{b['commitMsP50']:g} ms; {b['replays']:,} replays"
    )
    if b["drpcRequests"]:
        line += f"; {b['drpcRequests']:,} DRPC requests"
    if b["halted"]:
        line += f"\nHALTED: {b['halted']}"
    return line
