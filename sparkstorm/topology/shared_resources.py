"""Objects shared by every task in one worker process (Storm's worker-level resources).

Storm's workers share resources between their executors (``WorkerTopologyContext``'s
``getResource``, filled by worker hooks). Here the process is the unit: the driver for
the ``local`` engine, each Spark Python worker for ``spark``. A bolt asks its context
for ``shared_resource(key, factory)``; the first task in the process to ask creates it,
the others get the same object, and objects with a ``close()`` are closed when the
process exits normally. Like the collector, a shared object is never part of a bolt's
state snapshot: a bolt may keep it in any attribute.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)

_RESOURCES: dict[Hashable, Any] = {}
_LOCK = threading.Lock()


def shared_resource(key: Hashable, factory: Callable[[], T]) -> T:
    """The process's object under ``key``, created by ``factory`` on first use."""
    with _LOCK:
        if key not in _RESOURCES:
            _RESOURCES[key] = factory()
        resource: T = _RESOURCES[key]
        return resource


def is_shared(value: Any) -> bool:
    """Whether ``value`` is one of this process's shared objects (never in a snapshot)."""
    return any(value is resource for resource in _RESOURCES.values())


@atexit.register
def close_all() -> None:
    """Close every shared object that has a ``close()``; errors are logged."""
    with _LOCK:
        resources = list(_RESOURCES.values())
        _RESOURCES.clear()
    for resource in resources:
        close = getattr(resource, "close", None)
        if callable(close):
            try:
                close()
            except Exception as exc:
                log.warning("closing shared resource %r failed: %s", resource, exc)
