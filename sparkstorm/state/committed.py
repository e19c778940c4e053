"""A topology's committed state, read outside any run: what a restart would load.

The state provider's keys are not the truth on their own: a run that died between its
commit (the marker) and its tasks folding the staged changes in leaves the truth split
between the two. :func:`read_committed_state` rolls those staged changes forward in
memory, as a restart does in the store, and writes nothing, so it may read while the
topology runs (it then sees the last checkpoint committed when it read the marker, or a
later one for tasks that committed meanwhile: each task's ``txid`` says which).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sparkstorm.config import provider_config, state_provider
from sparkstorm.errors import StateStoreError
from sparkstorm.state.directory_store import DirectoryStore
from sparkstorm.state.redis_store import RedisStore
from sparkstorm.state.signing import OlderState
from sparkstorm.state.stores import Store, unreachable
from sparkstorm.urls import redacted

WINDOWS = "windows"
"""The suffix of a windowed stateful bolt's own buffer (``component:task:windows``)."""


@dataclass(frozen=True)
class TaskState:
    """One task's committed state."""

    component: str
    task: int
    txid: int
    """The checkpoint this state is as of (-1: none committed)."""
    data: dict[Any, Any]
    windows: bool = False
    """The window buffer of a windowed stateful bolt (engine-owned), not ``init_state``'s."""


@dataclass(frozen=True)
class CommittedState:
    """A topology's committed state, task by task.

    .. versionadded:: 0.2.0
    """

    topology: str
    provider: str
    where: str
    """The store's address (password masked) or path."""
    txid: int
    """The topology's last committed checkpoint (-1: none)."""
    tasks: list[TaskState] = field(default_factory=list)

    @property
    def components(self) -> list[str]:
        """The components with state, sorted."""
        return sorted({t.component for t in self.tasks})

    def of(self, component: str) -> dict[Any, Any]:
        """``component``'s state: its tasks' key-value pairs together.

        Under a fields grouping each key lives in one task; should two tasks hold one key
        (another grouping), this raises rather than pick one: read ``tasks`` instead.
        """
        merged: dict[Any, Any] = {}
        for task in self.tasks:
            if task.component != component or task.windows:
                continue
            both = merged.keys() & task.data.keys()
            if both:
                msg = (
                    f"component {component!r}: key {next(iter(both))!r} is in more than one "
                    f"task; read CommittedState.tasks for each task's own"
                )
                raise ValueError(msg)
            merged.update(task.data)
        if not merged and component not in self.components:
            msg = f"topology {self.topology!r} has no state for component {component!r}"
            raise KeyError(msg + (f" (components: {self.components})" if self.tasks else ""))
        return merged

    def items(self) -> Iterator[tuple[str, int, Any, Any]]:
        """(component, task, key, value) of every task's user state."""
        for task in self.tasks:
            if not task.windows:
                for key, value in task.data.items():
                    yield task.component, task.task, key, value


def open_reader(topology: str, conf: dict[str, Any]) -> tuple[Store, str, str]:
    """The topology's store, opened to read only, with its provider's name and address."""
    provider = state_provider(conf)
    config = provider_config(conf)
    if provider == "memory":
        msg = (
            f"topology {topology!r}: the 'memory' state provider keeps nothing outside a "
            f"run; pass the provider the topology runs with (topology.state.provider and "
            f"topology.state.provider.config)"
        )
        raise StateStoreError(msg)
    where = redacted(str(config.get("url") or config.get("path") or ""))
    try:
        store: Store = (
            RedisStore(config, topology, patient=False)
            if provider == "redis"
            else DirectoryStore(config, topology, create=False)
        )
        store.committed_txid()  # reach it now: one clear line if it is down
    except OlderState:
        pass  # reached: what it holds says so again to whoever reads it
    except StateStoreError:
        raise
    except Exception as exc:
        raise StateStoreError(unreachable(provider, config, exc)) from exc
    return store, provider, where


@contextmanager
def reading(topology: str, conf: dict[str, Any]) -> Iterator[tuple[Store, str, str]]:
    """:func:`open_reader`'s store, closed after."""
    store, provider, where = open_reader(topology, conf)
    try:
        yield store, provider, where
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()


def read_committed_state(topology: str, conf: dict[str, Any]) -> CommittedState:
    """``topology``'s state as of its last checkpoint, as a restart would load it.

    ``conf`` gives the state provider as the topology's own configuration does
    (``topology.state.provider`` and ``topology.state.provider.config``). Nothing is
    written.

    Raises
    ------
    StateStoreError
        If the provider is ``memory`` (nothing outlives a run) or cannot be reached.

    .. versionadded:: 0.2.0
    """
    with reading(topology, conf) as (store, provider, where):
        try:
            tasks = [read_task(store, name) for name in store.tasks()]
            return CommittedState(topology, provider, where, store.committed_txid(), tasks)
        except StateStoreError:  # forged or older state: its own line says which and what to do
            raise
        except Exception as exc:
            raise StateStoreError(unreachable(provider, provider_config(conf), exc)) from exc


def read_task(store: Store, name: str) -> TaskState:
    """One task's committed state; ``name`` is as :meth:`Store.tasks` gives it."""
    windows = name.endswith(f":{WINDOWS}")
    component, task = name.removesuffix(f":{WINDOWS}").rsplit(":", 1)
    txid, data = store.read(name)
    return TaskState(component, int(task), txid, data, windows)
