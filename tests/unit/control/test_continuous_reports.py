"""What the continuous driver keeps of its workers' reports across a lost stage.

A spout task's failures for good move to its next start, which a replay there settles.

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
        _dry_at={},
        _failure=None,
        restarting=restarting,
        _before={},
        _failures_before={},
        _lost_stats=[],
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


def spout(failed: dict[str, int], keys: dict[str, str], acked: int = 0) -> TaskStats:
    stats = TaskStats("sentences", 3)
    stats.acked, stats.failed_for_good, stats.failed_keys = acked, failed, keys
    return stats


def test_a_lost_spout_tasks_failures_for_good_count_once_and_move_to_its_next_start():
    keeping = runtime(restarting=False)
    ContinuousRuntime.take_report(
        keeping, report(spout({"rollback": 2}, {"m1": "rollback", "m2": "rollback"}))
    )  # type: ignore[arg-type]
    ContinuousRuntime._retire_workers(keeping)  # type: ignore[arg-type]
    assert keeping._failures_before == {3: ({"rollback": 2}, {"m1": "rollback", "m2": "rollback"})}
    assert keeping._lost_stats[0].failed_for_good == {"rollback": 2}  # until the new start
    assert keeping._lost_stats[0].failed_keys == {}  # said once, not kept twice

    # the new start took them on (its counts start from them) and settled m1's replay
    new = spout({"rollback": 1}, {"m2": "rollback"}, acked=1)
    ContinuousRuntime.take_report(keeping, report(new))  # type: ignore[arg-type]
    assert keeping._failures_before == {}
    assert keeping._lost_stats[0].failed_for_good == {}
    assert keeping.latest_stats[3].failed_for_good == {"rollback": 1}


def test_a_start_lost_before_it_reported_passes_the_failures_on_as_they_were():
    keeping = runtime(restarting=False)
    lost = spout({"explicit": 1}, {"m9": "explicit"})
    ContinuousRuntime.take_report(keeping, report(lost))  # type: ignore[arg-type]
    ContinuousRuntime._retire_workers(keeping)  # type: ignore[arg-type]
    ContinuousRuntime._retire_workers(keeping)  # lost again before a report of its own
    assert keeping._failures_before == {3: ({"explicit": 1}, {"m9": "explicit"})}
    assert keeping._lost_stats[0].failed_for_good == {"explicit": 1}
