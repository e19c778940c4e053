"""The acker: a system bolt tracking each tuple tree in ~20 bytes (Storm's ``Acker``).

Each entry is root id -> [ack_val, start time, spout task, fail reason]. ``ack_val`` is the
XOR of every edge id created or acked in the tree; it is 0 exactly when every tuple of
the tree was acked (up to a 2**-64 chance). Messages for a root may come in any order:
an ack or fail may arrive before the init, so every stream "gets or creates" the entry,
and a decision waits until the init has named the spout task.
"""

from __future__ import annotations

from typing import Any

from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.reliability.rotating_map import RotatingMap
from sparkstorm.reliability.streams import (
    ACKER_ACK_STREAM_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    ACKER_RESET_TIMEOUT_STREAM_ID,
    RESULT_FIELDS,
)
from sparkstorm.topology.components import Bolt
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.tuple import TICK_STREAM_ID, Tuple

TIMEOUT_BUCKETS = 3
VAL, START, SPOUT_TASK, FAILED = range(4)


class Acker(Bolt):
    """Component ``__acker``: sends each tree's outcome to the spout task that emitted it."""

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Start with an empty pending map."""
        self.collector = collector
        self.pending: RotatingMap[int, list[Any]] = RotatingMap(TIMEOUT_BUCKETS)

    def execute(self, tup: Tuple) -> None:
        """Apply one init/ack/fail/reset message (or rotate on a tick), then decide."""
        stream = tup.source_stream
        if stream == TICK_STREAM_ID:
            self.pending.rotate()  # expired entries are dropped: the spout times them out
            return
        root = tup.values[0]
        entry = self.pending.get(root)
        if entry is None:
            entry = [0, self.collector._now, -1, None]
            self.pending.put(root, entry)
        if stream == ACKER_INIT_STREAM_ID:
            entry[VAL] ^= tup.values[1]
            entry[SPOUT_TASK] = tup.values[2]
        elif stream == ACKER_ACK_STREAM_ID:
            entry[VAL] ^= tup.values[1]
        elif stream == ACKER_FAIL_STREAM_ID:
            entry[FAILED] = tup.values[1]
            self.pending.put(root, entry)  # fail may arrive before init: keep it alive
        elif stream == ACKER_RESET_TIMEOUT_STREAM_ID:
            self.pending.put(root, entry)

        if entry[SPOUT_TASK] >= 0:
            if entry[VAL] == 0:
                self.pending.remove(root)
                self._tell_spout(
                    entry, ACKER_ACK_STREAM_ID, [root, self.collector._now - entry[START]]
                )
            elif entry[FAILED] is not None:
                self.pending.remove(root)
                self._tell_spout(entry, ACKER_FAIL_STREAM_ID, [root, entry[FAILED]])
            elif stream == ACKER_RESET_TIMEOUT_STREAM_ID:
                self._tell_spout(entry, ACKER_RESET_TIMEOUT_STREAM_ID, [root, None])

    def _tell_spout(self, entry: list[Any], stream: str, values: list[Any]) -> None:
        self.collector._emit_system(entry[SPOUT_TASK], stream, RESULT_FIELDS, values)
