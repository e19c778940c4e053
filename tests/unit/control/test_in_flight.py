"""The continuous mode's "in flight", from worker reports taken at different moments."""

from __future__ import annotations

from types import SimpleNamespace

from sparkstorm.control.continuous import ContinuousRuntime


def in_flight(*reports: tuple[int, int, int]) -> int:
    runtime = SimpleNamespace(
        reports={
            i: SimpleNamespace(sent=s, received=r, backlog=b) for i, (s, r, b) in enumerate(reports)
        }
    )
    return ContinuousRuntime.in_flight.fget(runtime)  # type: ignore[attr-defined]


def test_moving_tuples_and_backlogs_add_up():
    assert in_flight((100, 40, 3), (50, 90, 2)) == 150 - 130 + 5


def test_a_receivers_newer_report_never_makes_it_negative_nor_hides_a_backlog():
    # the sender's report is older: the receiver already counts 20 more than it says sent
    assert in_flight((100, 0, 0), (0, 120, 7)) == 7
    assert in_flight((100, 0, 0), (0, 120, 0)) == 0
