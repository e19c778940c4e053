"""Topology configuration: Storm's ``Config``, a dict with Storm's keys and defaults.

Storm's own keys keep their names and meanings. Keys that only sparkstorm has live
under ``sparkstorm.``; each is documented in the README's configuration table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkstorm.errors import InvalidTopologyError

TOPOLOGY_ACKER_EXECUTORS = "topology.acker.executors"
TOPOLOGY_MESSAGE_TIMEOUT_SECS = "topology.message.timeout.secs"
TOPOLOGY_MAX_SPOUT_PENDING = "topology.max.spout.pending"
TOPOLOGY_TICK_TUPLE_FREQ_SECS = "topology.tick.tuple.freq.secs"
TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS = "topology.enable.message.timeouts"
TOPOLOGY_DEBUG = "topology.debug"
TOPOLOGY_NAME = "topology.name"
TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE = "topology.testing.always.try.serialize"

SPARKSTORM_SEED = "sparkstorm.seed"
SPARKSTORM_SPOUT_BATCH = "sparkstorm.superstep.spout.batch"
SPARKSTORM_SUPERSTEP_TARGET_SECS = "sparkstorm.superstep.target.secs"
SPARKSTORM_IDLE_TIMEOUT_SECS = "sparkstorm.idle.timeout.secs"
SPARKSTORM_SPARK_RESIDENT = "sparkstorm.spark.resident"
SPARKSTORM_CAPTURE = "sparkstorm.capture"
SPARKSTORM_SPARK_PARTITIONS = "sparkstorm.spark.partitions"
SPARKSTORM_GC_GEN0_THRESHOLD = "sparkstorm.gc.gen0.threshold"
SPARKSTORM_SPARK_PIPELINE = "sparkstorm.spark.pipeline"

DEFAULTS: dict[str, Any] = {
    TOPOLOGY_ACKER_EXECUTORS: 1,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS: 30,
    TOPOLOGY_MAX_SPOUT_PENDING: None,
    TOPOLOGY_TICK_TUPLE_FREQ_SECS: None,
    TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS: True,
    TOPOLOGY_DEBUG: False,
    TOPOLOGY_NAME: None,
    TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE: False,
    SPARKSTORM_SEED: 0,
    SPARKSTORM_SPOUT_BATCH: None,
    SPARKSTORM_SUPERSTEP_TARGET_SECS: None,
    SPARKSTORM_IDLE_TIMEOUT_SECS: 120,
    SPARKSTORM_SPARK_RESIDENT: True,
    SPARKSTORM_CAPTURE: [],
    SPARKSTORM_SPARK_PARTITIONS: None,
    SPARKSTORM_GC_GEN0_THRESHOLD: 50_000,
    SPARKSTORM_SPARK_PIPELINE: True,
}
"""Every key sparkstorm reads, with the value used when a topology does not set it."""


class Config(dict[str, Any]):
    """Storm's topology configuration: a plain ``dict`` with Storm's keys as constants.

    Passed to ``submit_topology`` / :func:`sparkstorm.run`; the engine merges it over
    :data:`DEFAULTS`, and a component's own configuration (``add_configuration`` or
    ``get_component_configuration``) over that for the component's tasks.

    Examples
    --------
    >>> conf = Config()
    >>> conf.set_num_ackers(2)
    >>> conf[Config.TOPOLOGY_ACKER_EXECUTORS]
    2

    .. versionadded:: 0.1.0
    """

    TOPOLOGY_ACKER_EXECUTORS = TOPOLOGY_ACKER_EXECUTORS
    TOPOLOGY_MESSAGE_TIMEOUT_SECS = TOPOLOGY_MESSAGE_TIMEOUT_SECS
    TOPOLOGY_MAX_SPOUT_PENDING = TOPOLOGY_MAX_SPOUT_PENDING
    TOPOLOGY_TICK_TUPLE_FREQ_SECS = TOPOLOGY_TICK_TUPLE_FREQ_SECS
    TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS = TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS
    TOPOLOGY_DEBUG = TOPOLOGY_DEBUG
    TOPOLOGY_NAME = TOPOLOGY_NAME
    TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE = TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE
    SPARKSTORM_SEED = SPARKSTORM_SEED
    SPARKSTORM_SPOUT_BATCH = SPARKSTORM_SPOUT_BATCH
    SPARKSTORM_SUPERSTEP_TARGET_SECS = SPARKSTORM_SUPERSTEP_TARGET_SECS
    SPARKSTORM_IDLE_TIMEOUT_SECS = SPARKSTORM_IDLE_TIMEOUT_SECS
    SPARKSTORM_SPARK_RESIDENT = SPARKSTORM_SPARK_RESIDENT
    SPARKSTORM_CAPTURE = SPARKSTORM_CAPTURE
    SPARKSTORM_SPARK_PARTITIONS = SPARKSTORM_SPARK_PARTITIONS
    SPARKSTORM_GC_GEN0_THRESHOLD = SPARKSTORM_GC_GEN0_THRESHOLD
    SPARKSTORM_SPARK_PIPELINE = SPARKSTORM_SPARK_PIPELINE

    def set_num_ackers(self, n: int) -> None:
        """Set ``topology.acker.executors``; 0 turns tracking off (at-most-once)."""
        self[TOPOLOGY_ACKER_EXECUTORS] = n

    def set_message_timeout_secs(self, secs: int) -> None:
        """Set ``topology.message.timeout.secs``."""
        self[TOPOLOGY_MESSAGE_TIMEOUT_SECS] = secs

    def set_max_spout_pending(self, n: int | None) -> None:
        """Set ``topology.max.spout.pending`` (per spout task; None = unbounded)."""
        self[TOPOLOGY_MAX_SPOUT_PENDING] = n

    def set_debug(self, debug: bool) -> None:
        """Set ``topology.debug``: log every emitted tuple."""
        self[TOPOLOGY_DEBUG] = debug


def resolve(conf: dict[str, Any] | None) -> dict[str, Any]:
    """Return a new plain dict: :data:`DEFAULTS` overlaid with ``conf``, values checked.

    Raises
    ------
    InvalidTopologyError
        When a known key holds a value of the wrong kind, naming the key.
    """
    merged = {**DEFAULTS, **(conf or {})}
    checks: dict[str, Callable[[Any], bool]] = {
        TOPOLOGY_ACKER_EXECUTORS: lambda v: isinstance(v, int) and v >= 0,
        TOPOLOGY_MESSAGE_TIMEOUT_SECS: lambda v: isinstance(v, int | float) and v > 0,
        TOPOLOGY_MAX_SPOUT_PENDING: lambda v: v is None or (isinstance(v, int) and v > 0),
        TOPOLOGY_TICK_TUPLE_FREQ_SECS: lambda v: (
            v is None or (isinstance(v, int | float) and v > 0)
        ),
        SPARKSTORM_SPOUT_BATCH: lambda v: v is None or (isinstance(v, int) and v > 0),
        SPARKSTORM_SUPERSTEP_TARGET_SECS: lambda v: (
            v is None or (isinstance(v, int | float) and 0 < v < float("inf"))
        ),
        SPARKSTORM_SEED: lambda v: isinstance(v, int),
        SPARKSTORM_GC_GEN0_THRESHOLD: lambda v: v is None or (isinstance(v, int) and v >= 0),
    }
    for key, ok in checks.items():
        value = merged[key]
        if isinstance(value, bool) or not ok(value):
            msg = f"config key {key!r} has the invalid value {value!r} (default: {DEFAULTS[key]!r})"
            raise InvalidTopologyError(msg)
    return merged
