"""What the continuous driver keeps of its workers' reports across a lost stage.

Between a loss and the restart, the lost stage's surviving workers still report until
they are told to stop. Their figures were retired with the stage; kept, they stood for
the new workers' tasks: an acker's unready trees of the old stage stalled the first
drain of the new one, and its counters, ahead of the new acker's, hid the new ones.
"""

from __future__ import annotations

from types import SimpleNamespace

from sparkstorm.control.continuous import ContinuousRuntime
from sparkstorm.engines.continuous.worker import WorkerReport
from sparkstorm.reliability.base_collector import ReportedError
from sparkstorm.tasks.metrics import TaskStats


def runtime(restarting: bool) -> SimpleNamespace:
    kept: list[ReportedError] = []
    return SimpleNamespace(
        latest_stats={},
        reports={},
        _failure=None,
        restarting=restarting,
        _before={},
        captured=SimpleNamespace(add=list),
        debugging=SimpleNamespace(note=list),
        kept=kept,
        _keep=kept.append,
        _mark_usage=lambda *_: None,
        stacks={},
        cpu_profiles={},
        worker_logs={},
        _fed={},
    )


def report(stats: TaskStats, errors: list[ReportedError] = []) -> WorkerReport:  # noqa: B006
    return WorkerReport(0, [stats], {}, errors, [], 0, 0, 0, 0, 0)


def acker(executed: int, unready: int) -> TaskStats:
    stats = TaskStats("__acker", 1)
    stats.executed, stats.unready = executed, unready
    return stats


def test_a_lost_stages_survivor_stands_for_no_task_of_the_new_one():
    keeping = runtime(restarting=True)
    error = ReportedError("split", 2, 0.0, "ValueError: a user's error, said once")
    ContinuousRuntime.take_report(keeping, report(acker(500, 11), [error]))  # type: ignore[arg-type]
    assert keeping.latest_stats == {} and keeping.reports == {}
    assert keeping.kept == [error]  # what it said is kept; its figures are not

    keeping.restarting = False  # the new stage's acker: fresh counters, no unready tree
    fresh = acker(3, 0)
    ContinuousRuntime.take_report(keeping, report(fresh))  # type: ignore[arg-type]
    assert keeping.latest_stats[1] is fresh


def test_a_running_stage_keeps_its_newest_figures():
    running = runtime(restarting=False)
    ContinuousRuntime.take_report(running, report(acker(500, 11)))  # type: ignore[arg-type]
    ContinuousRuntime.take_report(running, report(acker(400, 0)))  # type: ignore[arg-type]
    assert running.latest_stats[1].unready == 11  # an older report never wins
