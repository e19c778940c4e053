"""Checkpointed state of stateful bolts: ``KeyValueState`` and the stores behind it.

:func:`read_committed_state` reads a topology's committed state outside any run.
"""

from sparkstorm.state.committed import (
    CommittedState,
    TaskState,
    read_committed_state,
)
from sparkstorm.state.key_value import KeyValueState

__all__ = [
    "CommittedState",
    "KeyValueState",
    "TaskState",
    "read_committed_state",
]
