"""What the REST API and the run loop share: a :class:`Snapshot`, and commands.

The loop publishes a snapshot now and then; the API queues its commands on
``Control.commands``, which the loop takes between supersteps.
"""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sparkstorm.control.drpc import DRPCServer
from sparkstorm.control.history import History
from sparkstorm.tasks.process_usage import ProcessUsage

ACTIVATE, DEACTIVATE, KILL, REBALANCE = "activate", "deactivate", "kill", "rebalance"
STACKS, DEBUG, PROFILE, LOG_LEVEL = "stacks", "debug", "profile", "log_level"
MAX_PROFILE_SECS = 300
DEBUG_EVENTS = 200
"""The latest debug lines the topology's answer lists."""
STACKS_WAIT_SECS = 10.0
"""How long a stack dump of a worker may take to come back."""
TRIDENT_METRIC = "trident"
"""The metric a Trident coordinator reports its batches in (``trident/watching.py``)."""


class Command(NamedTuple):
    """An operator's action for the driver loop, as the API received it."""

    action: str
    wait: float | None = None
    """Kill and rebalance: the longest the drain may last, in seconds."""
    workers: int | None = None
    """Rebalance: how many workers to place the tasks over (None: as many as now).
    Stacks: the worker to dump the threads of."""
    component: str | None = None
    """Debug: the component (None: every one)."""
    percent: float = 0.0
    """Debug: the sampling percentage (0: off)."""
    level: str | None = None
    """Log level: the level to set ``component`` (here a logger's name) to, for ``wait``."""
    executors: dict[str, int] | None = None
    """Rebalance: components to keep in that many workers (Storm's ``-e component=N``)."""


@dataclass
class Snapshot:
    """What the API shows: the runtime's statistics and errors as of ``taken``."""

    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[Any] = field(default_factory=list)
    tasks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Per component, its tasks' statistics."""
    status: str = "STARTING"
    ended: str = ""
    """Why the run ends (a halt's reason, a kill, a signal), once it does."""
    final: bool = False
    """The run's last snapshot: its engine stopped, its figures are the final ones."""
    supersteps: int = 0
    in_flight: int = 0
    checkpoints: dict[str, Any] | None = None
    """Stateful topologies: the last commit, the phase, commits and rollbacks."""
    workers: list[dict[str, Any]] = field(default_factory=list)
    """The continuous mode's workers: host, process, tasks, queue depth, traffic."""
    restarts: list[dict[str, Any]] = field(default_factory=list)
    """The latest restarts after lost workers or supersteps: when, which worker, why."""
    restart_count: int = 0
    """Every restart over the run's life (``restarts`` keeps the latest)."""
    slots: int | None = None
    """The continuous mode: the task slots the cluster has now (the most workers a
    rebalance may ask for); None in the other modes."""
    topology_secs: float = 0.0
    """Topology time when the snapshot was taken (errors' times are topology times)."""
    driver: ProcessUsage | None = None
    """The driver's process: memory, CPU time, when the run started."""
    errors_let_go: int = 0
    """Occurrences of errors the run no longer keeps (see ``KeptErrors``)."""
    stacks: dict[int, tuple[float, str]] = field(default_factory=dict)
    """The continuous mode: per worker, its latest dump of its threads (when, text)."""
    debug_shares: dict[str, float] = field(default_factory=dict)
    """Storm UI's Debug: each component's share of calls noted."""
    log_levels: dict[str, dict[str, object]] = field(default_factory=dict)
    """Storm's ``namedLoggerLevels``: the loggers set for a while, and until when."""
    worker_logs: dict[int, list[tuple[float, str]]] = field(default_factory=dict)
    """The continuous workers' latest Python log records (when they came, the line)."""
    profiles: dict[str, tuple[float, str]] = field(default_factory=dict)
    """The latest CPU profiles asked for, by worker (``driver`` or a number): when, text."""
    debug_events: list[tuple[float, str]] = field(default_factory=list)
    """The latest debug lines, with when the driver got them."""
    taken: float = field(default_factory=time.time)


@dataclass
class Control:
    """What the driver shares with the server thread."""

    name: str
    engine: str
    token: str
    loopback: bool
    mode: str = "local"
    """``local``, ``superstep`` or ``continuous``: which figures and labels apply."""
    master: str | None = None
    spark_ui: str | None = None
    started: float = field(default_factory=time.time)
    snapshot: Snapshot = field(default_factory=Snapshot)
    commands: queue.Queue[Command] = field(default_factory=queue.Queue)
    rebalancing: int = 0
    """Rebalances the API accepted that the driver has not finished: REBALANCING."""
    kill_wait: float | None = None
    """Set when a kill arrived: the longest the drain may then last."""
    graph: dict[str, Any] = field(default_factory=dict)
    """The topology's components and subscriptions (see :func:`topology_graph`)."""
    configuration: dict[str, Any] = field(default_factory=dict)
    """The topology's resolved configuration, passwords masked."""
    drpc: DRPCServer | None = None
    """The run's DRPC server, for a topology's functions given none of their own."""
    drpc_timeout: float = 60.0
    """How long a DRPC call through the API waits for its answer."""
    last_read: float = 0.0
    """When (monotonic) a browser last read the summary: a page that polls it is watching
    (its fetches carry ``Sec-Fetch-Mode``; scripts and the CLI do not wait the run's end)."""
    last_figures_read: float = 0.0
    """When (monotonic) a client last read the topology's or a component's figures."""
    history: History = field(init=False)

    def __post_init__(self) -> None:
        self.history = History(self.started)
