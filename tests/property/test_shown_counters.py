"""What the page and the REST API show is never negative, nor above what was emitted.

Workers report at different moments, and a report can reach the driver after a newer
one (two sockets, a restart): here random runs are cut into per-task reports, which
reach the driver in any order. After each arrival the driver keeps its latest figures
as the continuous runtime does, records the history and publishes a snapshot; every
route of the REST API is then read. Every counter, rate and latency it shows must be
at least 0, and what a spout's trees did (acked, failed) never more than it emitted.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkstorm.control.api import build_app
from sparkstorm.control.api_model import Control, Snapshot
from sparkstorm.control.continuous import ContinuousRuntime
from sparkstorm.engines.continuous.worker import WorkerReport
from sparkstorm.tasks.metrics import TaskStats, by_component, by_task

SPOUT_TASKS, BOLT_TASKS = (1, 2), (3, 4)


def cumulative(steps: list[tuple[int, int, int, int]]) -> list[dict[int, TaskStats]]:
    """A run's true figures after each step: per task, counters that only grow.

    A step is (emitted by task 1, emitted by task 2, of those acked, of those failed);
    the bolts execute what was acked.
    """
    stats = {t: TaskStats("numbers", t) for t in SPOUT_TASKS}
    stats |= {t: TaskStats("count", t) for t in BOLT_TASKS}
    states = []
    for first, second, acked, failed in steps:
        for task, emitted in zip(SPOUT_TASKS, (first, second), strict=True):
            spout = stats[task]
            spout.emitted += emitted
            spout.transferred += emitted
            done = min(acked, spout.emitted - spout.acked - spout.failed)
            spout.acked += done
            spout.failed += min(failed, spout.emitted - spout.acked - spout.failed)
            spout.complete_latencies += [0.001 * (1 + done % 7)] * done
            bolt = stats[BOLT_TASKS[task - 1]]
            bolt.executed += done
            bolt.acked += done
            bolt.execute_secs += 0.0001 * done
        states.append({t: _copy(s) for t, s in stats.items()})
    return states


def _copy(stats: TaskStats) -> TaskStats:
    copy = TaskStats(stats.component, stats.task)
    for key in ("emitted", "transferred", "executed", "acked", "failed", "execute_secs"):
        setattr(copy, key, getattr(stats, key))
    copy.complete_latencies = list(stats.complete_latencies)
    return copy


def numbers(value: Any, path: str = "") -> list[tuple[str, float]]:
    """Every number in an API answer, with where it is."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [(path, value)]
    if isinstance(value, dict):
        return [n for k, v in value.items() for n in numbers(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [n for i, v in enumerate(value) for n in numbers(v, f"{path}[{i}]")]
    return []


async def every_answer(control: Control, components: list[str]) -> list[Any]:
    """Every read-only route's answer, for every window, system components included."""
    paths = ["/summary"]
    for window in ("600", "10800", "86400", ":all-time"):
        query = f"?window={window}&sys=true"
        paths += [f"/shown{query}", f"/shown/timeseries{query}"]
        paths += [f"/shown/component/{c}{query}" for c in components]
    transport = httpx.ASGITransport(app=build_app(control))
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
        answers = [await client.get("/api/v1/topology" + path) for path in paths]
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    return [a.json() for a in answers]


STEPS = st.lists(st.tuples(*(st.integers(0, 50) for _ in range(4))), min_size=2, max_size=8)


@settings(max_examples=20, deadline=None)
@given(steps=STEPS, order=st.randoms(use_true_random=False))
def test_no_counter_shown_is_negative_nor_above_what_was_emitted(steps, order):
    states = cumulative(steps)
    reports = [(i, t) for i, state in enumerate(states) for t in state]
    order.shuffle(reports)  # any order, an older report after a newer one included
    control = Control(name="shown", engine="spark", token="t", loopback=True, mode="continuous")
    # the continuous runtime's own take_report, over what it reads and writes of itself
    runtime = SimpleNamespace(
        latest_stats={},
        reports={},
        _dry_at={},
        _failure=None,
        restarting=False,
        _before={},
        _failures_before={},
        _lost_stats=[],
        captured=SimpleNamespace(add=list),
        debugging=SimpleNamespace(note=list),
    )
    now = time.time()
    most_emitted = 0
    for arrival, (step, task) in enumerate(reports):
        report = WorkerReport(task, [states[step][task]], {}, [], [], 0, 0, 0, 0, 0)
        ContinuousRuntime.take_report(runtime, report)  # type: ignore[arg-type]
        latest = list(runtime.latest_stats.values())
        rows = by_component(latest, superstep_secs=1.0)
        for component, row in rows.items():
            row["kind"] = "spout" if component == "numbers" else "bolt"
        most_emitted = max(most_emitted, rows.get("numbers", {}).get("emitted", 0))
        control.history.record(now + arrival, rows, [s for s in latest if s.task in SPOUT_TASKS])
        grouped: dict[str, list[dict[str, Any]]] = {}
        for task_row in by_task(latest, 1.0).values():
            grouped.setdefault(task_row["component"], []).append(task_row)
        control.snapshot = Snapshot(stats=rows, tasks=grouped, taken=now + arrival)
        answers = asyncio.run(every_answer(control, list(rows)))
        for answer in answers:
            negative = [(where, n) for where, n in numbers(answer) if n < 0]
            assert not negative, negative
            for spout in answer.get("spouts", []):
                assert spout["acked"] + spout["failed"] <= most_emitted, spout
            for row in answer.get("topologyStats", []):
                assert row["acked"] + row["failed"] <= most_emitted, row
