"""Where a Trident topology's coordinator keeps the last committed txid.

In the checkpoint store (``topology.state.provider``: Redis or a directory; the default,
``memory``, keeps it in the coordinator's process), under the topology's name. A
coordinator that starts again, in a new run or a new worker, goes on from the txid after
it: a durable state has seen every txid up to it, and a transactional or opaque map
would refuse, or skip, txids it has seen. The partitioned spouts' metadata goes with it,
in the same write (see ``trident/partitioned.py``).
"""

from __future__ import annotations

from typing import Any

from sparkstorm.config import (
    TOPOLOGY_NAME,
    TOPOLOGY_STATE_PROVIDER,
    provider_config,
)
from sparkstorm.state.stores import open_store


class Progress:
    """The last committed txid of one Trident topology."""

    def __init__(self, conf: dict[str, Any]) -> None:
        topology = f"{conf.get(TOPOLOGY_NAME) or 'topology'}:trident"
        self.store = open_store(conf[TOPOLOGY_STATE_PROVIDER], provider_config(conf), topology)

    def committed(self) -> int:
        """The last committed txid (0 before the first)."""
        return max(0, self.store.committed_txid())

    def spouts(self) -> dict[str, Any]:
        """What the partitioned spouts kept with it (their metadata), by tx id."""
        kept = self.store.committed_sources().get("trident") or [{}]
        return dict(kept[0])

    def commit(self, txid: int, spouts: dict[str, Any] | None = None) -> None:
        """Batch ``txid`` committed in every state; ``spouts``' metadata, in one write."""
        self.store.mark_committed(txid, {"trident": [spouts or {}]})
