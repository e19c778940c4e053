"""A stateful windowed task checkpoints what came and went, and rebuilds its windows."""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa

from sparkstorm import Config, Count, Fields, StatefulWindowedBolt, TopologyBuilder
from sparkstorm.arrow import StatefulWindowedArrowBolt
from sparkstorm.config import resolve
from sparkstorm.tasks.task_runner import BoltTask
from sparkstorm.tasks.task_state import restore, snapshot
from sparkstorm.testing import FeederSpout
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.streams import CHECKPOINT_STREAM_ID, SYSTEM_COMPONENT_ID
from sparkstorm.topology.tuple import Tuple

X = Fields("x")


class Windows(StatefulWindowedBolt):
    """Emits each window's values, then its new and its expired values."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, window: Any) -> None:
        values = [[t[0] for t in part] for part in (window, window.get_new(), window.get_expired())]
        self.collector.emit([values])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("windows"))


class ArrowWindows(StatefulWindowedArrowBolt):
    """:class:`Windows` over columns."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, window: Any) -> None:
        parts = (window.get(), window.get_new(), window.get_expired())
        values = [part.column(0).to_pylist() for part in parts]
        self.collector.emit_batch(pa.record_batch([pa.array([values])], names=["windows"]))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("windows"))


def make_task(length: int, slide: int, arrow: bool = False) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("in", FeederSpout(X))
    bolt = ArrowWindows() if arrow else Windows()
    builder.set_bolt("w", bolt.with_window(Count(length), Count(slide))).global_grouping("in")
    conf = {
        Config.TOPOLOGY_ACKER_EXECUTORS: 0,
        Config.TOPOLOGY_NAME: f"pw-{uuid.uuid4().hex[:8]}",
        "topology.state.provider": "memory",
    }
    plan = Plan(builder.create_topology(), resolve(conf))
    [task_id] = plan.component_tasks("w")

    def fresh() -> BoltTask:
        task = BoltTask(plan, task_id, seed=0)
        task.prepare()
        return task

    return fresh


def feed(task: BoltTask, values: list[Any], step: int = 0) -> list[Any]:
    captured: list[Any] = []
    task.run([Tuple([v], X, "in", "default", 1) for v in values], step, 0.0, [], captured=captured)
    return [emitted[0] for _, _, emitted in captured]


def checkpoint(task: BoltTask, action: str, txid: int) -> None:
    tup = Tuple(
        [action, txid], Fields("action", "txid"), SYSTEM_COMPONENT_ID, CHECKPOINT_STREAM_ID, 0
    )
    task.run([tup], 0, 0.0, [], captured=[])


def test_a_checkpoint_writes_the_tuples_since_the_last_one_not_the_window():
    task = make_task(length=1000, slide=1000)()
    feed(task, list(range(500)))
    checkpoint(task, "prepare", 1)
    checkpoint(task, "commit", 1)
    assert task.bolt.checkpoint_keys == 500 + 1  # every tuple, and the clocks
    feed(task, list(range(500, 510)))
    checkpoint(task, "prepare", 2)
    assert task.bolt.checkpoint_keys - 501 == 10 + 1


def test_tuples_given_as_expired_leave_the_state_and_a_rollback_restores_the_windows():
    fresh = make_task(length=4, slide=2)
    task = fresh()
    assert feed(task, ["a", "b", "c", "d"]) == [
        [["a", "b"], ["a", "b"], []],
        [["a", "b", "c", "d"], ["c", "d"], []],
    ]
    checkpoint(task, "prepare", 1)
    checkpoint(task, "commit", 1)
    # the next window: e, f new; a, b expired (then gone from the state)
    assert feed(task, ["e", "f"]) == [[["c", "d", "e", "f"], ["e", "f"], ["a", "b"]]]
    checkpoint(task, "prepare", 2)
    checkpoint(task, "commit", 2)
    assert sorted(k for k in task.bolt.windows if isinstance(k, int)) == [2, 3, 4, 5]
    feed(task, ["g", "h"])  # not committed: a rollback to 2 forgets them
    checkpoint(task, "rollback", 2)
    assert feed(task, ["G", "H"]) == [[["e", "f", "G", "H"], ["G", "H"], ["c", "d"]]]
    # and another instance, restored from a snapshot, carries on from the same windows
    moved = fresh()
    restore(moved, snapshot(task))
    assert feed(moved, ["i"]) == []
    assert feed(moved, ["j"]) == [[["G", "H", "i", "j"], ["i", "j"], ["e", "f"]]]


def test_columns_roll_back_to_the_committed_windows_again_and_again():
    """The windows rebuilt at a rollback are copies: what comes after it must not grow
    the committed windows a second rollback rebuilds from."""
    fresh = make_task(length=4, slide=2, arrow=True)
    task = fresh()
    assert feed(task, ["a", "b", "c", "d"]) == [
        [["a", "b"], ["a", "b"], []],
        [["a", "b", "c", "d"], ["c", "d"], []],
    ]
    checkpoint(task, "prepare", 1)
    checkpoint(task, "commit", 1)
    for attempt in ("e", "E", "3"):  # uncommitted, each time rolled back to 1
        first, second = f"{attempt}1", f"{attempt}2"
        assert feed(task, [first, second]) == [
            [["c", "d", first, second], [first, second], ["a", "b"]]
        ]
        checkpoint(task, "rollback", 1)
    moved = fresh()  # restored from a snapshot: the same committed windows
    restore(moved, snapshot(task))
    assert feed(moved, ["x", "y"]) == [[["c", "d", "x", "y"], ["x", "y"], ["a", "b"]]]
