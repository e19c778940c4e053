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
