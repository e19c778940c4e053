"""A Trident topology whose second batch always fails, for ``sparkstorm run`` (test_failures)."""

from __future__ import annotations

from typing import Any

from sparkstorm import Config, Fields
from sparkstorm.trident import Count, FixedBatchSpout, MemoryMapState, TridentTopology
from tests.trident.ops import Poison, Split


def topology() -> tuple[Any, Config]:
    sentences = [["bread and butter"], ["bread and arsenic"], ["tea"]]
    trident = TridentTopology()
    (
        trident.new_stream("meals", FixedBatchSpout(Fields("sentence"), 1, *sentences))
        .each(Fields("sentence"), Split(), Fields("token"))
        .each(Fields("token"), Poison("arsenic"), Fields("word"))
        .name("digest")
        .group_by(Fields("word"))
        .persistent_aggregate(MemoryMapState.Factory(), Count(), Fields("count"))
    )
    conf = Config()
    conf[Config.SPARKSTORM_TRIDENT_MAX_ATTEMPTS] = 3
    return trident.build(), conf
