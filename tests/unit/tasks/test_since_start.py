"""Figures an operator reads never go back when a task starts again (issue 55, defect 3)."""

from __future__ import annotations

from sparkstorm.tasks.metrics import TaskStats, latest_metrics
from sparkstorm.trident.watching import BatchFigures


def life(at: float, **figures: object) -> TaskStats:
    stats = TaskStats("trident-coordinator", 1)
    stats.metric_points.append((1, at, 1.0, [("trident", BatchFigures(figures))]))
    return stats


def test_a_restarted_coordinators_counts_go_on_and_its_txids_never_go_back():
    before = life(10.0, txid=23, committedTxid=20, committedBatches=4, replays=1, inFlight=3)
    after = life(20.0, txid=17, committedTxid=16, committedBatches=2, replays=0, inFlight=1)
    shown = latest_metrics([before, after])["trident"]
    assert shown["txid"] == 23 and shown["committedTxid"] == 20  # the highest said
    assert shown["committedBatches"] == 6 and shown["replays"] == 1  # summed over lives
    assert shown["inFlight"] == 1  # a gauge: the newest life's
    assert latest_metrics([after])["trident"]["committedBatches"] == 2  # one life: as is
