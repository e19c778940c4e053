"""The run's memory: what must outlive the workers but not the run, kept in the driver.

A run's workers come and go (a lost Python worker, a restarted stage, a rebalance); its
driver does not. What the default ``memory`` provider keeps therefore lives here, in the
driver's process, in named *spaces* of keys and values: Trident's progress (the last
committed txid and the spouts' metadata) and the contents of every ``MemoryMapState``.
The tasks reach it wherever they run, through ``mailbox`` (its address is
``sparkstorm.run.memory``), so after a loss the new tasks read back exactly what was
committed, as they would from Redis.

One memory serves one ``sparkstorm.run``, or one ``LocalCluster`` (every topology
submitted to it, under their names): a new run, or a new cluster, starts empty, as
Storm's ``LocalCluster`` starts with an empty ZooKeeper.

A space whose name starts with :data:`DURABLE` is the exception: the driver writes it
through to a JSON file of its own (0600 in a 0700 folder, replaced whole), and reads it
back from there later. That is where a Trident topology keeps its progress when its
states cannot say where they keep theirs: a user's own ``StateFactory``, as Storm keeps
it in ZooKeeper. A run's folder is ``~/.sparkstorm/trident/``, so a later run on the
same machine goes on from it; a ``LocalCluster``'s is a temporary folder that lives and
dies with the cluster, as Storm's in-process ZooKeeper does (unless the test names a
home): a user's test suite never writes into their home, and two clusters never share
progress.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sparkstorm.config import SPARKSTORM_RUN_MEMORY
from sparkstorm.control import mailbox
from sparkstorm.private_files import home_dir, read_private, replace_private
from sparkstorm.topology.builder import Topology
from sparkstorm.topology.components import UsesRunMemory

Space = dict[Any, Any]

DURABLE = "durable:"
"""A space named so outlives the run: the driver keeps it on its disk (JSON values only)."""


def durable_folder() -> Path:
    """Where the driver keeps the durable spaces (``$SPARKSTORM_HOME``, else ``~/.sparkstorm``)."""
    return home_dir() / "trident"


def durable_file(space: str, folder: Path | None = None) -> Path:
    """The file of durable space ``space`` in ``folder`` (default :func:`durable_folder`)."""
    name = f"{quote(space.removeprefix(DURABLE), safe='')}.json"
    return (durable_folder() if folder is None else folder) / name


class RunMemoryClient:
    """A task's handle on the run's memory (pickled into the tasks as its address)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.address, _, self.box = url.rpartition("/")

    def read(self, space: str) -> Space:
        """A copy of every key and value of ``space`` (empty if nothing was written)."""
        return mailbox.call(self.address, self.box, ("read", space))  # type: ignore[no-any-return]

    def write(self, space: str, puts: Space, deletes: Sequence[Any] = ()) -> None:
        """Set ``puts`` and remove ``deletes`` in ``space``, in one call."""
        mailbox.call(self.address, self.box, ("write", space, puts, list(deletes)))


class RunMemory(RunMemoryClient):
    """The spaces of one run (or one ``LocalCluster``), served to its tasks from here."""

    def __init__(self, host: str = mailbox.LOOPBACK, durable: Path | None = None) -> None:
        box = uuid.uuid4().hex
        self._spaces: dict[str, Space] = {}
        self._lock = threading.Lock()
        self.durable = durable_folder() if durable is None else durable
        """The folder of the durable spaces."""
        super().__init__(f"{mailbox.serve(box, self._serve, host)}/{box}")

    def _serve(self, request: tuple[Any, ...]) -> Space | None:
        kind, name, *rest = request
        with self._lock:
            space = self._spaces.get(name)
            if space is None and name.startswith(DURABLE):
                space = self._spaces[name] = _read_durable(self.durable, name)
            if kind == "read":
                return dict(space or {})
            puts, deletes = rest
            if space is None:
                space = self._spaces[name] = {}
            space.update(puts)
            for key in deletes:
                space.pop(key, None)
            if name.startswith(DURABLE):
                _write_durable(self.durable, name, space)
            return None

    def __reduce__(self) -> tuple[Any, ...]:
        return RunMemoryClient, (self.url,)

    def close(self) -> None:
        """Forget every space: the run is over."""
        mailbox.forget(self.box)
        self._spaces.clear()


def _read_durable(folder: Path, space: str) -> Space:
    try:
        kept: Space = json.loads(read_private(durable_file(space, folder)))
    except FileNotFoundError:
        return {}
    return kept


def _write_durable(folder: Path, space: str, values: Space) -> None:
    replace_private(durable_file(space, folder), json.dumps(values).encode())


def needs_memory(topology: Topology) -> bool:
    """Whether a component of ``topology`` keeps something in the run's memory."""
    return any(isinstance(s.obj, UsesRunMemory) for s in [*topology.spouts, *topology.bolts])


_local: RunMemory | None = None


def run_memory(conf: dict[str, Any]) -> RunMemoryClient:
    """The run's memory as a task reaches it (``sparkstorm.run.memory``).

    A runtime made without one (not through ``sparkstorm.run`` or ``LocalCluster``) gets
    one memory for this whole process: it lasts as long as the process.
    """
    url = conf.get(SPARKSTORM_RUN_MEMORY)
    if url:
        return RunMemoryClient(url)
    global _local
    if _local is None:
        _local = RunMemory()
    return _local
