"""Spouts and bolts for the continuous mode's tests (they run in Spark workers or threads)."""

from __future__ import annotations

import threading
import time
from typing import Any

from sparkstorm import Bolt, Fields, Spout
from sparkstorm.topology.components import HoldsWork


class NumberSpout(Spout):
    """Emits ``count`` numbers once each (msg id = the number), this task's share of them.

    ``replay``: a failed number is emitted again. Its emits carry (task, sequence number
    of the emit on this task), so a bolt can check FIFO per (sender, receiver).
    """

    def __init__(self, count: int, replay: bool = True) -> None:
        self.count, self.replay = count, replay

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.task = context.get_this_task_id()
        tasks = context.get_component_tasks(context.get_this_component_id())
        self.todo = list(range(tasks.index(self.task), self.count, len(tasks)))[::-1]
        self.seq = 0

    def next_tuple(self) -> None:
        if self.todo:
            number = self.todo.pop()
            self.seq += 1
            self.collector.emit([number, self.task, self.seq], msg_id=number)

    def fail(self, msg_id: Any, reason: Any = None) -> None:
        if self.replay:
            self.todo.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("number", "task", "seq"))


class InOrder(Bolt):
    """Acks each input; raises if a sender's sequence numbers ever go backwards."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.last: dict[int, int] = {}

    def execute(self, tup: Any) -> None:
        _, task, seq = tup.values
        if seq <= self.last.get(task, 0):
            msg = f"from task {task}: seq {seq} after {self.last[task]}"
            raise AssertionError(msg)
        self.last[task] = seq
        self.collector.emit([tup[0]], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("number"))


class FailFirstOfEveryFifth(Bolt):
    """Fails the first attempt of every 5th number; acks everything else."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.seen: set[int] = set()

    def execute(self, tup: Any) -> None:
        number = tup[0]
        if number % 5 == 0 and number not in self.seen:
            self.seen.add(number)
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


class ForgetsSeven(Bolt):
    """Acks every number but 7, which it neither acks nor fails: 7 times out."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        if tup[0] != 7:
            self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


class HoldUntilTick(Bolt):
    """Holds its inputs and acks them all at each tick; raises if it ever holds more than
    ``most`` (only a spout task past ``topology.max.spout.pending`` could make it)."""

    def __init__(self, most: int) -> None:
        self.most = most

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.held: list[Any] = []

    def execute(self, tup: Any) -> None:
        if tup.is_tick():
            for held in self.held:
                self.collector.ack(held)
            self.held = []
            return
        self.held.append(tup)
        if len(self.held) > self.most:
            msg = f"holding {len(self.held)} tuples, more than max spout pending {self.most}"
            raise AssertionError(msg)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


class OneArgumentFail(NumberSpout):
    """Storm's signature, ``fail(msg_id)``: no reason argument; never replays."""

    def fail(self, msg_id: Any) -> None:  # type: ignore[override]
        pass


class FolderQueue(Spout, HoldsWork):
    """Numbers ``0..count-1`` from a queue kept in ``folder``, as a broker keeps one.

    A number is done once acked (a ``done-N`` marker); a new start of the spout emits
    every number not done, as a broker redelivers what was never acked, and ``fail``
    leaves the number to that (a broker's requeue). The numbers from ``hold_at`` on
    wait until ``hold_secs`` after the first failure, so that the driver has heard of
    it before they go on (unless a worker was killed already: a ``killed-*`` marker).
    """

    def __init__(self, folder: str, count: int, hold_at: int, hold_secs: float) -> None:
        self.folder, self.count = folder, count
        self.hold_at, self.hold_secs = hold_at, hold_secs

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        from pathlib import Path

        self.collector, self.path = collector, Path(self.folder)
        done = {int(p.name.removeprefix("done-")) for p in self.path.glob("done-*")}
        self.todo = [n for n in range(self.count) if n not in done][::-1]
        self.failed_at: float | None = None

    def holding(self) -> str | None:
        if not self.todo or self.todo[-1] < self.hold_at or any(self.path.glob("killed-*")):
            return None
        if self.failed_at is not None and time.monotonic() >= self.failed_at + self.hold_secs:
            return None
        return f"numbers from {self.hold_at} on, until {self.hold_secs} s after a failure"

    def next_tuple(self) -> None:
        if not self.todo or self.holding() is not None:
            return
        number = self.todo.pop()
        self.collector.emit([number], msg_id=number)

    def message_key(self, msg_id: Any) -> int:
        return msg_id

    def ack(self, msg_id: Any) -> None:
        (self.path / f"done-{msg_id}").touch()

    def fail(self, msg_id: Any, reason: Any = None) -> None:
        if self.failed_at is None:
            self.failed_at = time.monotonic()

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("number"))


class SleepsOnce(Bolt):
    """Acks each input; on the first, sleeps ``secs`` first (a call that blocks a while)."""

    def __init__(self, secs: float) -> None:
        self.secs = secs

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector, self.slept = collector, False

    def execute(self, tup: Any) -> None:
        if not self.slept:
            self.slept = True
            time.sleep(self.secs)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


class KillsItsWorkerOnce(Bolt):
    """Acks every number; the first time it sees one of ``killers``, ends its process.

    A marker file in ``folder`` per number makes each kill happen once across restarts,
    as a worker lost to a machine, not to the tuple.
    """

    def __init__(self, folder: str, killers: list[int], in_thread: bool = False) -> None:
        self.folder, self.killers, self.in_thread = folder, set(killers), in_thread

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        import os
        from pathlib import Path

        number = tup[0]
        marker = Path(self.folder) / f"killed-{number}"
        if number in self.killers and not marker.exists():
            marker.touch()
            if self.in_thread:  # a worker in a thread of the test: end the thread alone
                raise SystemExit(1)
            os._exit(1)  # the worker's Python process dies, as on a lost machine
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


class FreezesItsWorkerOnce(Bolt):
    """Acks every number; at ``number``, the first time, stops its own process (SIGSTOP).

    A frozen process sends nothing, its watchdog thread included: from the driver, a
    worker whose host was cut off or hangs. The marker file holds its process id, for
    the test to make sure it is gone.
    """

    def __init__(self, folder: str, number: int) -> None:
        self.folder, self.number = folder, number

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        import os
        import signal
        from pathlib import Path

        marker = Path(self.folder) / "frozen"
        if tup[0] == self.number and not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGSTOP)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


class DiesInPrepare(Bolt):
    """Ends its worker's process in ``prepare``, every time: a crash loop."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        import os

        os._exit(3)

    def execute(self, tup: Any) -> None:
        pass

    def declare_output_fields(self, declarer: Any) -> None:
        pass


class UnreachableSource(Spout):
    """Reports, at ``open``, that its broker cannot be reached; emits nothing."""

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        task = context.get_this_task_id()
        collector.report_error(ConnectionError(f"task {task}: 127.0.0.1:9 refused"))

    def next_tuple(self) -> None:
        pass

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("number"))


ASKED, EMITTED = threading.Event(), threading.Event()
"""For :class:`EmitsWhenAsked`, whose workers are threads of the test's process."""


class EmitsWhenAsked(Spout):
    """Emits one tuple (msg id 1) once :data:`ASKED` is set, then sets :data:`EMITTED`."""

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def next_tuple(self) -> None:
        if ASKED.is_set() and not EMITTED.is_set():
            self.collector.emit([1, 0, 1], msg_id=1)
            EMITTED.set()

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("number", "task", "seq"))


class Trickle(Spout):
    """Emits one number every ``every`` seconds (wall clock) for ``secs`` after ``open``:
    a source that is slow, not finished."""

    def __init__(self, every: float, secs: float) -> None:
        self.every, self.secs = every, secs

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector, self.sent = collector, 0
        self.task, self.started = context.get_this_task_id(), time.monotonic()

    def next_tuple(self) -> None:
        elapsed = time.monotonic() - self.started
        if elapsed < self.secs and elapsed >= self.sent * self.every:
            self.sent += 1
            self.collector.emit([self.sent, self.task, self.sent], msg_id=self.sent)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("number", "task", "seq"))


class FailsOnceThenKills(KillsItsWorkerOnce):
    """Fails ``failing`` the first time it comes (a marker), and kills its worker at the
    ``killers`` as :class:`KillsItsWorkerOnce`."""

    def __init__(self, folder: str, killers: list[int], failing: int) -> None:
        super().__init__(folder, killers)
        self.failing = failing

    def execute(self, tup: Any) -> None:
        from pathlib import Path

        marker = Path(self.folder) / f"failed-{tup[0]}"
        if tup[0] == self.failing and not marker.exists():
            marker.touch()
            self.collector.fail(tup)
            return
        super().execute(tup)


SLOW_STARTS: list[tuple[int, int, float]] = []
"""(number, task, when its execute began), for the threads engine's tests."""


class SlowEcho(Bolt):
    """Notes when it begins each tuple, then takes ``secs`` over it and acks it."""

    def __init__(self, secs: float) -> None:
        self.secs = secs

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector, self.task = collector, context.get_this_task_id()

    def execute(self, tup: Any) -> None:
        SLOW_STARTS.append((tup[0], self.task, time.monotonic()))
        time.sleep(self.secs)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass
