from __future__ import annotations

from rich.console import Console

from sparkstorm.display import stats_table
from sparkstorm.tasks.metrics import TaskStats, by_component


def rendered(stats: dict) -> str:
    console = Console(record=True, width=200)
    console.print(stats_table(stats, "word count"))
    return console.export_text()


def test_bolt_state_columns_appear_once_some_state_is_snapshotted() -> None:
    count = TaskStats("count", 1, executed=10, snapshots=2, state_bytes=1234, snapshot_bytes=2400)
    stats = by_component([TaskStats("sentences", 0), count], 0.0)
    stats["sentences"]["kind"], stats["count"]["kind"] = "spout", "bolt"
    stats["count"]["snapshot_bytes_per_superstep"] = 600
    text = rendered(stats)
    assert "State B" in text and "1,234" in text and "600" in text
    stats["count"]["snapshots"] = 0  # the local engine keeps state in place
    assert "State B" not in rendered(stats)


def test_means_show_a_dash_until_there_is_something_to_average() -> None:
    spout = TaskStats("sentences", 1, emitted=5)
    stats = by_component([spout, TaskStats("count", 2)], 10.0)
    stats["sentences"]["kind"], stats["count"]["kind"] = "spout", "bolt"
    stats["sentences"]["pending"] = 5
    line = next(x for x in rendered(stats).splitlines() if x.strip().startswith("sentences"))
    assert line.split() == ["sentences", "5", "0", "5", "0", "0", "-", "-"]
    stats["sentences"]["spout_batch"] = 1200
    assert "Spouts  (batch 1,200 calls per task and superstep)" in rendered(stats)
    spout.acked, spout.complete_latencies = 1, [0.25]
    stats = by_component([spout], 10.0)
    stats["sentences"]["kind"] = "spout"
    assert "250" in rendered(stats)


def test_capacity_is_the_busiest_tasks_share_of_the_superstep_time() -> None:
    tasks = [TaskStats("split", 1, execute_secs=0.3), TaskStats("split", 2, execute_secs=0.6)]
    assert by_component(tasks, superstep_secs=1.2)["split"]["capacity"] == 0.5
    assert by_component(tasks, superstep_secs=0.0)["split"]["capacity"] == 0.0


def big_run() -> dict:
    """A run with big counts, as a long one on Spark has, snapshots and failures included."""
    tasks = [
        TaskStats("sentences", 1, emitted=1_280_000, transferred=2_560_000, acked=1_279_000),
        TaskStats("split", 2, executed=1_280_000, emitted=10_240_000, acked=1_280_000),
        TaskStats(
            "count", 3, executed=10_240_000, acked=10_240_000, snapshots=9, state_bytes=9_999
        ),
    ]
    tasks[0].fail_reasons = {"timeout": 1_000}
    stats = by_component(tasks, 100.0)
    stats["sentences"]["kind"], stats["sentences"]["pending"] = "spout", 1_000
    stats["split"]["kind"] = stats["count"]["kind"] = "bolt"
    stats["count"]["snapshot_bytes_per_superstep"] = 123_456
    return stats


def test_a_narrow_terminal_drops_the_least_needed_columns_and_cuts_nothing() -> None:
    console = Console(record=True, width=80)
    console.print(stats_table(big_run(), "word count", width=80))
    text = console.export_text()
    assert "…" not in text and all(len(line) <= 80 for line in text.splitlines())
    assert "1,280,000" in text and "10,240,000" in text  # the counts stay whole
    for header in ("Acked", "Failed", "Pending", "Executed", "Cap"):
        assert header in text
    assert "Snap B/step" not in text  # dropped first
    wide = Console(record=True, width=200)
    wide.print(stats_table(big_run(), "word count", width=200))
    every = wide.export_text()
    assert "Snap B/step" in every and "Xferred" in every
