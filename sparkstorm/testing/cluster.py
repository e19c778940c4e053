"""``LocalCluster`` and ``FeederSpout``: a topology run in the test, fed, time moved.

Examples
--------
>>> from sparkstorm import Fields, TopologyBuilder
>>> from sparkstorm.testing import FeederSpout, LocalCluster
>>> with LocalCluster() as cluster:                       # doctest: +SKIP
...     feeder = FeederSpout(Fields("word"))
...     builder = TopologyBuilder()
...     builder.set_spout("words", feeder)
...     builder.set_bolt("count", CountBolt()).shuffle_grouping("words")
...     cluster.submit_topology("t", {}, builder.create_topology())
...     feeder.feed(["a"], msg_id=1)
...     cluster.wait_until_idle()
...     assert feeder.acked == [1]
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from sparkstorm._types import FailReason, MsgId
from sparkstorm.config import (
    SPARK_MODES,
    SPARKSTORM_IDLE_TIMEOUT_SECS,
    SPARKSTORM_RUN_MEMORY,
    SPARKSTORM_SIMULATED_TIME,
    SPARKSTORM_SPARK_MODE,
    TOPOLOGY_TRIDENT_BATCH_EMIT_INTERVAL_MILLIS,
    resolve,
)
from sparkstorm.control.clock import SimulatedClock, WallClock
from sparkstorm.control.continuous import ContinuousRuntime
from sparkstorm.control.run_memory import RunMemory, needs_memory
from sparkstorm.control.superstep import TopologyRuntime
from sparkstorm.engines import ENGINES, driver_address, make_continuous_engine, make_engine
from sparkstorm.errors import IdleTimeoutError
from sparkstorm.reliability.base_collector import ReportedError
from sparkstorm.reliability.spout_collector import SpoutOutputCollector
from sparkstorm.topology.builder import Topology
from sparkstorm.topology.components import Spout
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.declarers import DEFAULT_STREAM_ID, OutputFieldsDeclarer
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.storm_time import simulate
from sparkstorm.trident import driving

__all__ = ["FeederSpout", "LocalCluster"]


@dataclass
class _FeederState:
    queue: deque[tuple[list[Any], MsgId]] = field(default_factory=deque)
    acked: list[MsgId] = field(default_factory=list)
    failed: list[MsgId] = field(default_factory=list)
    fail_reasons: list[FailReason | None] = field(default_factory=list)
    next_tuple_calls: int = 0


_FEEDERS: dict[str, _FeederState] = {}
"""Feeder state by id, shared by every copy of a FeederSpout in this process (Storm's registry)."""


class FeederSpout(Spout):
    """A spout fed from the test: ``feed(values, msg_id)``; records acks and fails.

    Every task copy of one FeederSpout shares its queue and records, so ``acked`` and
    ``failed`` can be read on the object the test built. It never replays what fails.

    .. versionadded:: 0.1.0
    """

    def __init__(self, fields: Fields, stream: str = DEFAULT_STREAM_ID) -> None:
        self._fields = fields
        self._stream = stream
        self._feeder_id = uuid.uuid4().hex
        _FEEDERS[self._feeder_id] = _FeederState()

    @property
    def _state(self) -> _FeederState:
        own: _FeederState | None = self.__dict__.get("_own")
        return own if own is not None else _FEEDERS[self._feeder_id]

    # -- the continuous mode: this copy in a worker, the test's object on the driver ----
    @property
    def feeder_key(self) -> str:
        """The key every copy of this feeder shares."""
        return self._feeder_id

    def detach(self) -> None:
        """In a worker: keep a state of this copy's own, fed from the driver."""
        self._own = _FeederState()

    def take(self, items: list[tuple[list[Any], MsgId]]) -> None:
        """In a worker: queue what the driver forwarded."""
        self._state.queue.extend(items)

    def outcomes(self) -> tuple[list[MsgId], list[tuple[MsgId, FailReason | None]], int]:
        """In a worker: acks, fails (with reasons) and ``next_tuple`` calls since the last call."""
        state = self._state
        told = (state.acked[:], list(zip(state.failed, state.fail_reasons, strict=True)))
        calls = state.next_tuple_calls
        state.acked.clear()
        state.failed.clear()
        state.fail_reasons.clear()
        state.next_tuple_calls = 0
        return (*told, calls)

    def record(self, outcomes: tuple[list[MsgId], list[tuple[MsgId, Any]], int]) -> None:
        """On the driver: add what a worker's copy reported to the test's records."""
        acked, failed, calls = outcomes
        state = self._state
        state.acked.extend(acked)
        for msg_id, reason in failed:
            state.failed.append(msg_id)
            state.fail_reasons.append(reason)
        state.next_tuple_calls += calls

    def handed_over(self) -> list[tuple[list[Any], MsgId]]:
        """On the driver: what the test fed since the last call (it goes to a worker)."""
        queue = self._state.queue
        items = list(queue)
        queue.clear()
        return items

    def feed(self, values: list[Any], msg_id: MsgId | None = None) -> None:
        """Queue a tuple; without ``msg_id`` a fresh uuid4 string is used, so it is tracked."""
        self._state.queue.append(
            (list(values), msg_id if msg_id is not None else str(uuid.uuid4()))
        )

    def feed_no_ack(self, values: list[Any]) -> None:
        """Queue a tuple emitted without a msg id (untracked)."""
        self._state.queue.append((list(values), None))

    @property
    def acked(self) -> list[MsgId]:
        """Msg ids acked so far, in the order the spout saw them."""
        return list(self._state.acked)

    @property
    def failed(self) -> list[MsgId]:
        """Msg ids failed so far, in the order the spout saw them."""
        return list(self._state.failed)

    @property
    def fail_reasons(self) -> list[FailReason | None]:
        """The reason of each failure, aligned with :attr:`failed`."""
        return list(self._state.fail_reasons)

    @property
    def next_tuple_calls(self) -> int:
        """How many times ``next_tuple`` was called, over all tasks."""
        return self._state.next_tuple_calls

    def open(
        self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector
    ) -> None:
        """Keep the collector."""
        self._collector = collector

    def next_tuple(self) -> None:
        """Emit the next fed tuple, if any."""
        state = self._state
        state.next_tuple_calls += 1
        if state.queue:
            values, msg_id = state.queue.popleft()
            self._collector.emit(values, msg_id, self._stream)

    def ack(self, msg_id: MsgId) -> None:
        """Record the ack."""
        self._state.acked.append(msg_id)

    def fail(self, msg_id: MsgId, reason: FailReason | None = None) -> None:
        """Record the failure and its reason."""
        self._state.failed.append(msg_id)
        self._state.fail_reasons.append(reason)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the feeder's fields on its stream."""
        declarer.declare(self._fields, self._stream)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_collector", "_own")}


class LocalCluster:
    """Runs topologies in this process on an engine, with simulated or wall-clock time.

    ``engine="local"`` runs every task here; ``engine="spark"`` runs bolts and ackers in
    Spark executors (``spark`` takes a SparkSession, else one is created on ``master``),
    in the mode ``mode`` or the topology's ``sparkstorm.spark.mode`` (``continuous``:
    every task, spouts included, in long-running workers; fed tuples, acks and the
    simulated clock travel between the test and them). With ``simulated_time=True``
    time moves only through :meth:`advance_time`. What a run would keep in
    ``~/.sparkstorm`` for the next run (Trident progress of a user's own states) lives
    in a temporary folder that dies with the cluster, as Storm's in-process ZooKeeper;
    ``home`` names a folder to keep it in instead (its ``trident/``).

    .. versionadded:: 0.1.0
    """

    def __init__(
        self,
        engine: str = "local",
        simulated_time: bool = True,
        *,
        spark: Any = None,
        master: str | None = None,
        mode: str | None = None,
        home: str | Path | None = None,
    ) -> None:
        if engine not in ENGINES:
            msg = f"unknown engine {engine!r}; choose one of {list(ENGINES)}"
            raise ValueError(msg)
        if mode is not None and mode not in SPARK_MODES:
            msg = f"unknown mode {mode!r}; choose one of {list(SPARK_MODES)}"
            raise ValueError(msg)
        self._engine_name, self._spark, self._master = engine, spark, master
        self._mode = mode
        self._clock: SimulatedClock | WallClock = (
            SimulatedClock() if simulated_time else WallClock()
        )
        self._topologies: dict[str, TopologyRuntime | ContinuousRuntime] = {}
        self._memory: RunMemory | None = None
        """What outlives the workers: Trident's progress, MemoryMapStates (made when first
        needed, empty)."""
        self._home = Path(home) if home is not None else None
        self._own_home: Path | None = None
        """The temporary folder of the cluster's durable spaces, removed at shutdown."""
        driving.register(self._run_until)  # Trident's feed() and LocalDRPC wait through it

    def _run_until(self, condition: Callable[[], bool], timeout: float) -> None:
        """Run the topologies until ``condition()`` holds (a Trident feed or DRPC call)."""
        deadline = time.monotonic() + timeout
        while not condition():
            runtimes = [rt for rt in self._topologies.values() if not rt.killed]
            if not runtimes or time.monotonic() > deadline:
                busy = "; ".join(f"{rt.name!r}: {rt.busy_with()}" for rt in runtimes)
                msg = f"waited {timeout} s in vain ({busy or 'no topology is running'})"
                raise IdleTimeoutError(msg)
            for rt in runtimes:
                rt.step()

    def submit_topology(
        self,
        name: str,
        conf: dict[str, Any] | None,
        topology: Topology,
        active: bool = True,
        *,
        capture: bool = False,
    ) -> None:
        """Start ``topology`` as ``name``; ``active=False`` submits it deactivated.

        ``capture=True`` records every value each component emits (see :meth:`captured`).
        """
        if name in self._topologies:
            msg = f"a topology named {name!r} is already running; kill it first"
            raise ValueError(msg)
        if isinstance(self._clock, SimulatedClock):  # tasks read it through Time
            conf = {**(conf or {}), SPARKSTORM_SIMULATED_TIME: True}
        conf = {TOPOLOGY_TRIDENT_BATCH_EMIT_INTERVAL_MILLIS: 50, **(conf or {})}  # as Storm's
        if needs_memory(topology):
            if self._memory is None:
                host = driver_address(self._engine_name, conf, self._spark, self._master)
                self._memory = RunMemory(host, self._durable_folder())
            conf[SPARKSTORM_RUN_MEMORY] = self._memory.url
        resolved = resolve(conf)
        mode = self._mode or resolved[SPARKSTORM_SPARK_MODE]
        if self._engine_name == "spark" and mode == "continuous":
            made = make_continuous_engine(resolved, spark=self._spark, master=self._master)
            self._topologies[name] = ContinuousRuntime(
                name, topology, conf, made, self._clock, active=active, capture=capture
            )
            return
        engine = make_engine(self._engine_name, spark=self._spark, master=self._master)
        self._topologies[name] = TopologyRuntime(
            name, topology, conf, engine, self._clock, active=active, capture=capture
        )

    def _runtime(self, name: str) -> TopologyRuntime | ContinuousRuntime:
        try:
            return self._topologies[name]
        except KeyError:
            msg = f"no topology named {name!r} (running: {sorted(self._topologies)})"
            raise KeyError(msg) from None

    def wait_until_idle(self, timeout: float | None = None) -> None:
        """Run supersteps until no tuple is in flight and no spout emits anything.

        Raises
        ------
        IdleTimeoutError
            If a topology is still busy after ``timeout`` wall seconds (default
            ``sparkstorm.idle.timeout.secs``), saying what it still has in flight.
        """
        runtimes = [rt for rt in self._topologies.values() if not rt.killed]
        if not runtimes:
            return
        limit = (
            timeout
            if timeout is not None
            else max(rt.conf[SPARKSTORM_IDLE_TIMEOUT_SECS] for rt in runtimes)
        )
        deadline = time.monotonic() + limit
        while True:
            for rt in runtimes:
                rt.step()
            # a running superstep counts here, ticks only or not: its results must be in
            busy = [
                rt
                for rt in runtimes
                if rt.checkpoints.pausing
                or not rt.idle()
                or rt.engine.busy
                or rt.holding() is not None
            ]
            if not busy:
                return
            if time.monotonic() > deadline:
                rt = busy[0]
                msg = f"topology {rt.name!r} is not idle after {limit} s: {rt.busy_with()}"
                raise IdleTimeoutError(msg)

    def advance_time(self, secs: float) -> None:
        """Move time forward in 1 s steps; after each, fire ticks and timeouts, run until idle.

        With wall-clock time this runs the topologies for ``secs`` real seconds.
        """
        if isinstance(self._clock, WallClock):
            deadline = self._clock.now() + secs
            while self._clock.now() < deadline:
                self.wait_until_idle()
                time.sleep(min(0.05, max(0.0, deadline - self._clock.now())))
            self.wait_until_idle()
            return
        whole = int(secs)
        for _ in range(whole):
            self._clock.advance(1)
            self.wait_until_idle()
        if secs > whole:
            self._clock.advance(secs - whole)
            self.wait_until_idle()

    def activate(self, name: str) -> None:
        """Activate topology ``name``."""
        self._runtime(name).activate()

    def deactivate(self, name: str) -> None:
        """Deactivate topology ``name``: no more ``next_tuple`` until activated."""
        self._runtime(name).deactivate()

    def kill_topology(self, name: str) -> None:
        """Stop ``name``: drain in-flight trees, fail what is still pending, close, clean up."""
        self._runtime(name).kill()
        del self._topologies[name]

    def errors(self, name: str) -> list[ReportedError]:
        """Errors reported or raised by the tasks of ``name``, oldest first."""
        return list(self._runtime(name).errors)

    def captured(
        self, name: str, component: str, stream: str = DEFAULT_STREAM_ID
    ) -> list[list[Any]]:
        """Values ``component`` emitted on ``stream`` (submit with ``capture=True``)."""
        return list(self._runtime(name).captured.get((component, stream), []))

    def stats(self, name: str) -> dict[str, dict[str, Any]]:
        """Per-component statistics of ``name``."""
        return self._runtime(name).stats()

    def shutdown(self) -> None:
        """Kill every topology; ``Time`` reads the wall clock again in this process."""
        for name in list(self._topologies):
            self.kill_topology(name)
        simulate(None)
        driving.unregister(self._run_until)
        if self._memory is not None:
            self._memory.close()
        if self._own_home is not None:
            shutil.rmtree(self._own_home, ignore_errors=True)
            self._own_home = None

    def _durable_folder(self) -> Path:
        """Where the Trident progress the driver keeps goes.

        The named home's, else the cluster's own temporary folder: as Storm's in-process
        ZooKeeper, it dies with the cluster and never touches the user's home.
        """
        if self._home is not None:
            return self._home / "trident"
        self._own_home = Path(tempfile.mkdtemp(prefix="sparkstorm-local-cluster-"))
        return self._own_home / "trident"

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()
