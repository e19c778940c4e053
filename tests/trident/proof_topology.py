"""Trident's proof: a Redis stream -> split -> group_by -> Count into a Redis or PostgreSQL map.

Run through ``sparkstorm run`` and SIGKILLed by ``test_sigkill_proof.py``; configured by
environment variables: ``PROOF_NAME`` (the stream, the map and the run),
``PROOF_REDIS`` (the Redis of the stream, the map and the progress; default the
loopback one), and ``PROOF_KIND``, ``transactional`` (a transactional spout into a
transactional Redis map) or ``opaque`` (an opaque spout into an opaque PostgreSQL map).
Beside the counts, tumbling windows of 100 words are counted, their counts summed into
the map ``PROOF_NAME_windows`` (windows kept in Redis, or with ``PROOF_WINDOWS=memory`` in
the run's memory). Three batches of at most 50 entries are in flight; the coordinator's
progress and the batches' id ranges are kept in Redis under ``PROOF_NAME``, or, with
``PROOF_DEFAULTS`` set, where a topology of default settings keeps them (beside the map).
"""

from __future__ import annotations

import os
from typing import Any

from sparkstorm import Config, Fields
from sparkstorm.connectors.redis_streams_trident import (
    RedisStreamOpaqueTridentSpout,
    RedisStreamTridentSpout,
)
from sparkstorm.trident import (
    Count,
    InMemoryWindowsStoreFactory,
    RedisWindowsStoreFactory,
    Sum,
    TridentTopology,
    WindowsStoreFactory,
)
from sparkstorm.trident.state.postgres import PostgresMapState
from sparkstorm.trident.state.redis import RedisMapState
from tests.trident.ops import SplitData

DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
WINDOW = 100
"""Words a tumbling window counts; the windows' counts are summed into ``NAME_windows``."""
REDIS = "redis://127.0.0.1:6379/0"


def topology() -> tuple[Any, Config]:
    name, kind = os.environ["PROOF_NAME"], os.environ["PROOF_KIND"]
    redis = os.environ.get("PROOF_REDIS", REDIS)
    if kind == "transactional":
        spout: Any = RedisStreamTridentSpout(redis, name, max_batch_size=50)
        factory = RedisMapState.transactional(redis, name)
    else:
        spout = RedisStreamOpaqueTridentSpout(redis, name, max_batch_size=50)
        factory = PostgresMapState.opaque(DSN, name)
    trident = TridentTopology()
    words = (
        trident.new_stream("stream", spout)
        .each(Fields("data"), SplitData(), Fields("word"))
        .parallelism_hint(2)
    )
    words.group_by(Fields("word")).persistent_aggregate(
        factory, Count(), Fields("count")
    ).parallelism_hint(2).name("counts")
    windows: WindowsStoreFactory = (
        InMemoryWindowsStoreFactory()
        if os.environ.get("PROOF_WINDOWS") == "memory"
        else RedisWindowsStoreFactory(redis, name)
    )
    totals = (
        RedisMapState.transactional(redis, f"{name}_windows")
        if kind == "transactional"
        else PostgresMapState.opaque(DSN, f"{name}_windows")
    )
    (
        words.global_()
        .tumbling_window(WINDOW, windows, Fields("word"), Count(), Fields("words"))
        .persistent_aggregate(totals, Fields("words"), Sum(), Fields("total"))
        .name("windows")
    )
    conf = Config()
    conf.set_max_spout_pending(3)
    if not os.environ.get("PROOF_DEFAULTS"):
        conf[Config.TOPOLOGY_STATE_PROVIDER] = "redis"
        conf[Config.TOPOLOGY_STATE_PROVIDER_CONFIG] = {"url": redis, "key_prefix": name}
    return trident.build(), conf
