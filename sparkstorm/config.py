"""Topology configuration: Storm's ``Config``, checked against the keys sparkstorm knows.

``Config()`` is an empty dict with Storm's key names as constants; the engine merges it
over :data:`DEFAULTS`. Storm's own keys keep their names and meanings; keys only
sparkstorm has live under ``sparkstorm.``. The namespaces ``topology.``, ``storm.`` and
``sparkstorm.`` belong to Storm and to sparkstorm, so a key there that neither knows is
a typo and is rejected with the nearest known key; any other key (``myapp.db.url``) is
the user's own, kept and handed to ``open``/``prepare``, as Storm allows; ``spark.*``
keys are Spark settings and go to a Spark session the engine creates.
"""

from __future__ import annotations

import difflib
import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparkstorm.errors import InvalidTopologyError

log = logging.getLogger(__name__)

TOPOLOGY_ACKER_EXECUTORS = "topology.acker.executors"
TOPOLOGY_MESSAGE_TIMEOUT_SECS = "topology.message.timeout.secs"
TOPOLOGY_MAX_SPOUT_PENDING = "topology.max.spout.pending"
TOPOLOGY_TASKS = "topology.tasks"
TOPOLOGY_AUTO_TASK_HOOKS = "topology.auto.task.hooks"
TOPOLOGY_METRICS_CONSUMER_REGISTER = "topology.metrics.consumer.register"
TOPOLOGY_BUILTIN_METRICS_BUCKET_SIZE_SECS = "topology.builtin.metrics.bucket.size.secs"
TOPOLOGY_MAX_TASK_PARALLELISM = "topology.max.task.parallelism"
TOPOLOGY_TICK_TUPLE_FREQ_SECS = "topology.tick.tuple.freq.secs"
TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS = "topology.enable.message.timeouts"
TOPOLOGY_DEBUG = "topology.debug"
TOPOLOGY_NAME = "topology.name"
TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE = "topology.testing.always.try.serialize"
TOPOLOGY_MAX_ERROR_REPORT_PER_INTERVAL = "topology.max.error.report.per.interval"
TOPOLOGY_ERROR_THROTTLE_INTERVAL_SECS = "topology.error.throttle.interval.secs"
TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS = "topology.state.checkpoint.interval.ms"
TOPOLOGY_STATE_PROVIDER = "topology.state.provider"
TOPOLOGY_STATE_PROVIDER_CONFIG = "topology.state.provider.config"

SPARKSTORM_SEED = "sparkstorm.seed"
SPARKSTORM_SPOUT_BATCH = "sparkstorm.superstep.spout.batch"
SPARKSTORM_SUPERSTEP_TARGET_SECS = "sparkstorm.superstep.target.secs"
SPARKSTORM_IDLE_TIMEOUT_SECS = "sparkstorm.idle.timeout.secs"
SPARKSTORM_IDLE_GRACE_SECS = "sparkstorm.idle.grace.secs"
SPARKSTORM_WATCHDOG_SECS = "sparkstorm.watchdog.secs"
SPARKSTORM_SPARK_RESIDENT = "sparkstorm.spark.resident"
SPARKSTORM_CAPTURE = "sparkstorm.capture"
SPARKSTORM_CAPTURE_MAX_VALUES = "sparkstorm.capture.max.values"
SPARKSTORM_SIMULATED_TIME = "sparkstorm.simulated.time"
SPARKSTORM_SPARK_PARTITIONS = "sparkstorm.spark.partitions"
SPARKSTORM_GC_GEN0_THRESHOLD = "sparkstorm.gc.gen0.threshold"
SPARKSTORM_SPARK_PIPELINE = "sparkstorm.spark.pipeline"
SPARKSTORM_SPARK_MODE = "sparkstorm.spark.mode"
SPARK_MODES = ("superstep", "continuous")
"""The Spark engine's execution modes (see docs/architecture.md)."""
SPARKSTORM_SUPERSTEP_HOPS = "sparkstorm.superstep.hops"
SPARKSTORM_UI_HOST = "sparkstorm.ui.host"
SPARKSTORM_UI_PORT = "sparkstorm.ui.port"
SPARKSTORM_UI_TOKEN = "sparkstorm.ui.token"
SPARKSTORM_UI_HOSTS = "sparkstorm.ui.hosts"
SPARKSTORM_STATE_SECRET = "sparkstorm.state.secret"
SPARKSTORM_RESTART_MAX_FAILURES = "sparkstorm.restart.max.failures"
SPARKSTORM_RESTART_FAILURE_INTERVAL_SECS = "sparkstorm.restart.failure.interval.secs"
SPARKSTORM_RESTART_DELAY_INITIAL_SECS = "sparkstorm.restart.delay.initial.secs"
SPARKSTORM_RESTART_DELAY_MAX_SECS = "sparkstorm.restart.delay.max.secs"
SPARKSTORM_RESTART_STABLE_SECS = "sparkstorm.restart.stable.secs"
SPARKSTORM_WORKER_TIMEOUT_SECS = "sparkstorm.worker.timeout.secs"
TOPOLOGY_TRIDENT_BATCH_EMIT_INTERVAL_MILLIS = "topology.trident.batch.emit.interval.millis"
SPARKSTORM_TRIDENT_MAX_ATTEMPTS = "sparkstorm.trident.max.attempts"
TOPOLOGY_SPOUT_MAX_BATCH_SIZE = "topology.spout.max.batch.size"
SPARKSTORM_DRPC_SERVER = "sparkstorm.drpc.server"
SPARKSTORM_DRPC_FUNCTIONS = "sparkstorm.drpc.functions"
SPARKSTORM_DRPC_REQUEST_TIMEOUT_SECS = "sparkstorm.drpc.request.timeout.secs"
SPARKSTORM_RUN_MEMORY = "sparkstorm.run.memory"

RESERVED_PREFIXES = ("topology.", "storm.", "sparkstorm.")
"""Namespaces whose keys must be known: a key there that is not is a typo."""
SPARK_PREFIX = "spark."

STORM_KEYS_WITHOUT_EFFECT = frozenset(
    {
        "topology.workers",
        "topology.worker.childopts",
        "topology.kryo.register",
        "topology.fall.back.on.java.serialization",
        "topology.skip.missing.kryo.registrations",
        "topology.executor.receive.buffer.size",
        "topology.executor.send.buffer.size",
        "topology.transfer.buffer.size",
        "topology.stats.sample.rate",
        "topology.backpressure.enable",
        "topology.environment",
    }
)
"""Storm keys a Storm topology's conf often carries that mean nothing here: accepted,
with a warning, so a Storm conf runs unchanged."""


@dataclass(frozen=True)
class _Kind:
    """What values a key takes: a check, how a command-line string parses, a description."""

    check: Callable[[Any], bool]
    parse: Callable[[str], Any]
    text: str
    optional: bool = False

    def accepts(self, value: Any) -> bool:
        return (self.optional and value is None) or self.check(value)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (isinstance(v, int | float) and not isinstance(v, bool)) and math.isfinite(v)


_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def _parse_bool(raw: str) -> Any:
    word = raw.strip().lower()
    return True if word in _TRUE else False if word in _FALSE else raw


def _parse_number(raw: str) -> Any:
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw


def _parse_list(raw: str) -> Any:
    if raw.strip().startswith("["):
        return json.loads(raw)
    return [item.strip() for item in raw.split(",") if item.strip()]


def _optional(kind: _Kind) -> _Kind:
    def parse(raw: str) -> Any:
        return None if raw.strip().lower() in ("none", "null", "") else kind.parse(raw)

    return _Kind(kind.check, parse, f"{kind.text} or None", optional=True)


_BOOL = _Kind(lambda v: isinstance(v, bool), _parse_bool, "true or false")
_INT = _Kind(_is_int, _parse_number, "an integer")
_COUNT = _Kind(lambda v: _is_int(v) and v >= 0, _parse_number, "an integer >= 0")
_POSITIVE_INT = _Kind(lambda v: _is_int(v) and v > 0, _parse_number, "an integer > 0")
_SECONDS = _Kind(lambda v: _is_number(v) and v > 0, _parse_number, "a number of seconds > 0")
_NAMES = _Kind(
    lambda v: isinstance(v, list | tuple | frozenset | set) and all(isinstance(x, str) for x in v),
    _parse_list,
    "a list of component ids",
)
_TEXT = _Kind(lambda v: isinstance(v, str), str, "a string")


def _is_json_object(v: Any) -> bool:
    if isinstance(v, dict):
        return True
    try:
        return isinstance(v, str) and isinstance(json.loads(v), dict)
    except ValueError:
        return False


_STORM_PROVIDER_NAMES = {
    "org.apache.storm.state.InMemoryKeyValueStateProvider": "memory",
    "org.apache.storm.redis.state.RedisKeyValueStateProvider": "redis",
}
STATE_PROVIDERS = ("memory", "redis", "directory")
"""The values ``topology.state.provider`` takes (``sparkstorm.state.stores`` opens them)."""


def provider_name(name: str) -> str:
    """``topology.state.provider`` as one of :data:`STATE_PROVIDERS` (Storm's class names too)."""
    name = _STORM_PROVIDER_NAMES.get(name, name)
    if name not in STATE_PROVIDERS:
        msg = (
            f"config key 'topology.state.provider' is {name!r}; use one of {list(STATE_PROVIDERS)} "
            f"(or Storm's {sorted(_STORM_PROVIDER_NAMES)})"
        )
        raise ValueError(msg)
    return name


def state_provider(conf: dict[str, Any]) -> str:
    """The stateful bolts' provider: ``topology.state.provider``, ``memory`` when not named.

    A Trident topology reads the key itself: not named, it keeps its progress where its
    states are (``trident/progress.py``).
    """
    return provider_name(conf.get(TOPOLOGY_STATE_PROVIDER) or "memory")


def provider_known(name: str) -> bool:
    """Whether ``name`` is a state provider sparkstorm has."""
    try:
        provider_name(name)
    except ValueError:
        return False
    return True


def provider_config(conf: dict[str, Any]) -> dict[str, Any]:
    """``topology.state.provider.config`` as a dict (Storm gives it as JSON text)."""
    raw = conf.get(TOPOLOGY_STATE_PROVIDER_CONFIG)
    parsed: dict[str, Any] = json.loads(raw) if isinstance(raw, str) else dict(raw or {})
    if conf.get(SPARKSTORM_STATE_SECRET):  # what signs the stored state (state/signing.py)
        parsed.setdefault("secret", conf[SPARKSTORM_STATE_SECRET])
    return parsed


_HOOKS = _Kind(
    lambda v: isinstance(v, list | tuple) and all(isinstance(x, str | type) for x in v),
    _parse_list,
    "a list of task hook classes, or their 'package.module.Class' names",
)

_CONSUMERS = _Kind(
    lambda v: (
        isinstance(v, list | tuple)
        and all(isinstance(x, dict) and isinstance(x.get("class"), str | type) for x in v)
    ),
    lambda raw: json.loads(raw),
    'a list of {"class": ..., "argument": ...}, as Config.register_metrics_consumer adds',
)

_JSON_OBJECT = _Kind(_is_json_object, str, "a JSON object (a dict, or its JSON text)")

KINDS: dict[str, _Kind] = {
    TOPOLOGY_ACKER_EXECUTORS: _COUNT,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS: _SECONDS,
    TOPOLOGY_MAX_SPOUT_PENDING: _optional(_POSITIVE_INT),
    TOPOLOGY_TASKS: _optional(_POSITIVE_INT),
    TOPOLOGY_AUTO_TASK_HOOKS: _HOOKS,
    TOPOLOGY_METRICS_CONSUMER_REGISTER: _CONSUMERS,
    TOPOLOGY_BUILTIN_METRICS_BUCKET_SIZE_SECS: _SECONDS,
    TOPOLOGY_MAX_TASK_PARALLELISM: _optional(_POSITIVE_INT),
    TOPOLOGY_TICK_TUPLE_FREQ_SECS: _optional(_SECONDS),
    TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS: _BOOL,
    TOPOLOGY_DEBUG: _BOOL,
    TOPOLOGY_NAME: _optional(_TEXT),
    TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE: _BOOL,
    TOPOLOGY_MAX_ERROR_REPORT_PER_INTERVAL: _POSITIVE_INT,
    TOPOLOGY_ERROR_THROTTLE_INTERVAL_SECS: _SECONDS,
    TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS: _POSITIVE_INT,
    TOPOLOGY_STATE_PROVIDER: _optional(
        _Kind(
            lambda v: isinstance(v, str) and provider_known(v),
            str,
            "memory, redis or directory (or Storm's provider class name)",
        )
    ),
    TOPOLOGY_STATE_PROVIDER_CONFIG: _optional(_JSON_OBJECT),
    SPARKSTORM_SEED: _INT,
    SPARKSTORM_SPOUT_BATCH: _optional(_POSITIVE_INT),
    SPARKSTORM_SUPERSTEP_TARGET_SECS: _optional(_SECONDS),
    SPARKSTORM_IDLE_TIMEOUT_SECS: _SECONDS,
    SPARKSTORM_IDLE_GRACE_SECS: _Kind(
        lambda v: _is_number(v) and v >= 0, _parse_number, "a number of seconds >= 0"
    ),
    SPARKSTORM_WATCHDOG_SECS: _SECONDS,
    SPARKSTORM_SPARK_RESIDENT: _BOOL,
    SPARKSTORM_CAPTURE: _NAMES,
    SPARKSTORM_CAPTURE_MAX_VALUES: _POSITIVE_INT,
    SPARKSTORM_SIMULATED_TIME: _BOOL,
    SPARKSTORM_SPARK_PARTITIONS: _optional(_POSITIVE_INT),
    SPARKSTORM_GC_GEN0_THRESHOLD: _optional(_COUNT),
    SPARKSTORM_SPARK_PIPELINE: _BOOL,
    SPARKSTORM_SPARK_MODE: _Kind(lambda v: v in SPARK_MODES, str, f"one of {list(SPARK_MODES)}"),
    SPARKSTORM_SUPERSTEP_HOPS: _COUNT,
    SPARKSTORM_UI_HOST: _TEXT,
    SPARKSTORM_UI_PORT: _Kind(lambda v: _is_int(v) and 0 <= v < 65536, _parse_number, "a port"),
    SPARKSTORM_UI_TOKEN: _optional(_TEXT),
    SPARKSTORM_UI_HOSTS: _Kind(_NAMES.check, _parse_list, "a list of host names"),
    SPARKSTORM_STATE_SECRET: _optional(_TEXT),
    SPARKSTORM_RESTART_MAX_FAILURES: _POSITIVE_INT,
    SPARKSTORM_RESTART_FAILURE_INTERVAL_SECS: _SECONDS,
    SPARKSTORM_RESTART_DELAY_INITIAL_SECS: _SECONDS,
    SPARKSTORM_RESTART_DELAY_MAX_SECS: _SECONDS,
    SPARKSTORM_RESTART_STABLE_SECS: _SECONDS,
    SPARKSTORM_WORKER_TIMEOUT_SECS: _SECONDS,
    TOPOLOGY_TRIDENT_BATCH_EMIT_INTERVAL_MILLIS: _POSITIVE_INT,
    SPARKSTORM_TRIDENT_MAX_ATTEMPTS: _POSITIVE_INT,
    TOPOLOGY_SPOUT_MAX_BATCH_SIZE: _POSITIVE_INT,
    SPARKSTORM_DRPC_SERVER: _optional(_TEXT),
    SPARKSTORM_DRPC_FUNCTIONS: _NAMES,
    SPARKSTORM_DRPC_REQUEST_TIMEOUT_SECS: _SECONDS,
    SPARKSTORM_RUN_MEMORY: _optional(_TEXT),
}
"""Every key sparkstorm reads, with the values it takes."""

DEFAULTS: dict[str, Any] = {
    TOPOLOGY_ACKER_EXECUTORS: 1,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS: 30,
    TOPOLOGY_MAX_SPOUT_PENDING: None,
    TOPOLOGY_TASKS: None,
    TOPOLOGY_AUTO_TASK_HOOKS: [],
    TOPOLOGY_METRICS_CONSUMER_REGISTER: [],
    TOPOLOGY_BUILTIN_METRICS_BUCKET_SIZE_SECS: 60,
    TOPOLOGY_MAX_TASK_PARALLELISM: None,
    TOPOLOGY_TICK_TUPLE_FREQ_SECS: None,
    TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS: True,
    TOPOLOGY_DEBUG: False,
    TOPOLOGY_NAME: None,
    TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE: False,
    TOPOLOGY_MAX_ERROR_REPORT_PER_INTERVAL: 5,
    TOPOLOGY_ERROR_THROTTLE_INTERVAL_SECS: 10,
    TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS: 1000,
    TOPOLOGY_STATE_PROVIDER: None,
    TOPOLOGY_STATE_PROVIDER_CONFIG: None,
    SPARKSTORM_SEED: 0,
    SPARKSTORM_SPOUT_BATCH: None,
    SPARKSTORM_SUPERSTEP_TARGET_SECS: None,
    SPARKSTORM_IDLE_TIMEOUT_SECS: 120,
    SPARKSTORM_IDLE_GRACE_SECS: 0.5,
    SPARKSTORM_WATCHDOG_SECS: 5.0,
    SPARKSTORM_SPARK_RESIDENT: True,
    SPARKSTORM_CAPTURE: [],
    SPARKSTORM_CAPTURE_MAX_VALUES: 100_000,
    SPARKSTORM_SIMULATED_TIME: False,
    SPARKSTORM_SPARK_PARTITIONS: None,
    SPARKSTORM_GC_GEN0_THRESHOLD: 50_000,
    SPARKSTORM_SPARK_PIPELINE: True,
    SPARKSTORM_SPARK_MODE: "continuous",
    SPARKSTORM_SUPERSTEP_HOPS: 16,
    SPARKSTORM_UI_HOST: "127.0.0.1",
    SPARKSTORM_UI_PORT: 0,
    SPARKSTORM_UI_TOKEN: None,
    SPARKSTORM_UI_HOSTS: [],
    SPARKSTORM_STATE_SECRET: None,
    # a worker lost every 20 s or less often runs for ever; a crash loop ends within a
    # minute or two (docs/reliability.md)
    SPARKSTORM_RESTART_MAX_FAILURES: 6,
    SPARKSTORM_RESTART_FAILURE_INTERVAL_SECS: 120,
    SPARKSTORM_RESTART_DELAY_INITIAL_SECS: 1.0,
    SPARKSTORM_RESTART_DELAY_MAX_SECS: 10.0,
    SPARKSTORM_RESTART_STABLE_SECS: 10.0,
    # Storm's supervisor.worker.timeout.secs: a silent worker is lost after this long
    SPARKSTORM_WORKER_TIMEOUT_SECS: 30.0,
    # Trident: how long the coordinator waits before asking dry spouts for a batch again
    TOPOLOGY_TRIDENT_BATCH_EMIT_INTERVAL_MILLIS: 500,
    # a batch failed this many times stops the topology (Storm replays it for ever)
    SPARKSTORM_TRIDENT_MAX_ATTEMPTS: 10,
    # Trident: how many tuples a batch takes from a core spout (Storm's RichSpoutBatchExecutor)
    TOPOLOGY_SPOUT_MAX_BATCH_SIZE: 1000,
    # set by sparkstorm.run for a topology with DRPC functions of no LocalDRPC: where its
    # tasks reach the run's DRPC server
    SPARKSTORM_DRPC_SERVER: None,
    # a Trident coordinator's own configuration: its functions served by the run's server
    SPARKSTORM_DRPC_FUNCTIONS: [],
    # how long the REST API and `sparkstorm drpc` wait for an answer (Storm's
    # drpc.request.timeout.secs is 600)
    SPARKSTORM_DRPC_REQUEST_TIMEOUT_SECS: 60,
    # set by sparkstorm.run and LocalCluster: where the tasks reach the run's memory in the
    # driver (Trident's progress and MemoryMapStates, kept through lost workers)
    SPARKSTORM_RUN_MEMORY: None,
}
"""Every key sparkstorm reads, with the value used when a topology does not set it."""


class Config(dict[str, Any]):
    """Storm's topology configuration: a plain ``dict`` with Storm's keys as constants.

    ``Config()`` starts empty. Passed to ``submit_topology`` / :func:`sparkstorm.run`;
    the engine checks it (see the module docstring) and merges it over
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
    TOPOLOGY_TASKS = TOPOLOGY_TASKS
    TOPOLOGY_AUTO_TASK_HOOKS = TOPOLOGY_AUTO_TASK_HOOKS
    TOPOLOGY_METRICS_CONSUMER_REGISTER = TOPOLOGY_METRICS_CONSUMER_REGISTER
    TOPOLOGY_BUILTIN_METRICS_BUCKET_SIZE_SECS = TOPOLOGY_BUILTIN_METRICS_BUCKET_SIZE_SECS
    TOPOLOGY_MAX_TASK_PARALLELISM = TOPOLOGY_MAX_TASK_PARALLELISM
    TOPOLOGY_TICK_TUPLE_FREQ_SECS = TOPOLOGY_TICK_TUPLE_FREQ_SECS
    TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS = TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS
    TOPOLOGY_DEBUG = TOPOLOGY_DEBUG
    TOPOLOGY_NAME = TOPOLOGY_NAME
    TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE = TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE
    TOPOLOGY_MAX_ERROR_REPORT_PER_INTERVAL = TOPOLOGY_MAX_ERROR_REPORT_PER_INTERVAL
    TOPOLOGY_ERROR_THROTTLE_INTERVAL_SECS = TOPOLOGY_ERROR_THROTTLE_INTERVAL_SECS
    TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS = TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS
    TOPOLOGY_STATE_PROVIDER = TOPOLOGY_STATE_PROVIDER
    TOPOLOGY_STATE_PROVIDER_CONFIG = TOPOLOGY_STATE_PROVIDER_CONFIG
    SPARKSTORM_SEED = SPARKSTORM_SEED
    SPARKSTORM_SPOUT_BATCH = SPARKSTORM_SPOUT_BATCH
    SPARKSTORM_SUPERSTEP_TARGET_SECS = SPARKSTORM_SUPERSTEP_TARGET_SECS
    SPARKSTORM_IDLE_TIMEOUT_SECS = SPARKSTORM_IDLE_TIMEOUT_SECS
    SPARKSTORM_IDLE_GRACE_SECS = SPARKSTORM_IDLE_GRACE_SECS
    SPARKSTORM_WATCHDOG_SECS = SPARKSTORM_WATCHDOG_SECS
    SPARKSTORM_SPARK_RESIDENT = SPARKSTORM_SPARK_RESIDENT
    SPARKSTORM_CAPTURE = SPARKSTORM_CAPTURE
    SPARKSTORM_CAPTURE_MAX_VALUES = SPARKSTORM_CAPTURE_MAX_VALUES
    SPARKSTORM_SIMULATED_TIME = SPARKSTORM_SIMULATED_TIME
    SPARKSTORM_SPARK_PARTITIONS = SPARKSTORM_SPARK_PARTITIONS
    SPARKSTORM_GC_GEN0_THRESHOLD = SPARKSTORM_GC_GEN0_THRESHOLD
    SPARKSTORM_SPARK_PIPELINE = SPARKSTORM_SPARK_PIPELINE
    SPARKSTORM_SPARK_MODE = SPARKSTORM_SPARK_MODE
    SPARKSTORM_SUPERSTEP_HOPS = SPARKSTORM_SUPERSTEP_HOPS
    SPARKSTORM_UI_HOST = SPARKSTORM_UI_HOST
    SPARKSTORM_UI_PORT = SPARKSTORM_UI_PORT
    SPARKSTORM_UI_TOKEN = SPARKSTORM_UI_TOKEN
    SPARKSTORM_UI_HOSTS = SPARKSTORM_UI_HOSTS
    SPARKSTORM_STATE_SECRET = SPARKSTORM_STATE_SECRET
    SPARKSTORM_RESTART_MAX_FAILURES = SPARKSTORM_RESTART_MAX_FAILURES
    SPARKSTORM_RESTART_FAILURE_INTERVAL_SECS = SPARKSTORM_RESTART_FAILURE_INTERVAL_SECS
    SPARKSTORM_RESTART_DELAY_INITIAL_SECS = SPARKSTORM_RESTART_DELAY_INITIAL_SECS
    SPARKSTORM_RESTART_DELAY_MAX_SECS = SPARKSTORM_RESTART_DELAY_MAX_SECS
    SPARKSTORM_RESTART_STABLE_SECS = SPARKSTORM_RESTART_STABLE_SECS
    SPARKSTORM_WORKER_TIMEOUT_SECS = SPARKSTORM_WORKER_TIMEOUT_SECS
    TOPOLOGY_TRIDENT_BATCH_EMIT_INTERVAL_MILLIS = TOPOLOGY_TRIDENT_BATCH_EMIT_INTERVAL_MILLIS
    SPARKSTORM_TRIDENT_MAX_ATTEMPTS = SPARKSTORM_TRIDENT_MAX_ATTEMPTS
    TOPOLOGY_SPOUT_MAX_BATCH_SIZE = TOPOLOGY_SPOUT_MAX_BATCH_SIZE
    SPARKSTORM_DRPC_REQUEST_TIMEOUT_SECS = SPARKSTORM_DRPC_REQUEST_TIMEOUT_SECS

    def set_num_ackers(self, n: int) -> None:
        """Set ``topology.acker.executors``; 0 turns tracking off (at-most-once)."""
        self[TOPOLOGY_ACKER_EXECUTORS] = n

    def set_message_timeout_secs(self, secs: int) -> None:
        """Set ``topology.message.timeout.secs``."""
        self[TOPOLOGY_MESSAGE_TIMEOUT_SECS] = secs

    def set_max_spout_pending(self, n: int | None) -> None:
        """Set ``topology.max.spout.pending`` (per spout task; None = unbounded)."""
        self[TOPOLOGY_MAX_SPOUT_PENDING] = n

    def set_max_task_parallelism(self, n: int | None) -> None:
        """Set ``topology.max.task.parallelism``: no component runs more tasks than ``n``.

        As in Storm, for tests and local runs that should not start a topology's full
        parallelism.

        .. versionadded:: 0.2.0
        """
        self[TOPOLOGY_MAX_TASK_PARALLELISM] = n

    def register_metrics_consumer(
        self, consumer: type | str, argument: Any = None, parallelism_hint: int = 1
    ) -> None:
        """Send every task's metrics to ``consumer`` (a class, or its dotted name).

        Storm's ``registerMetricsConsumer``; the consumer runs on the driver, once
        (``parallelism_hint`` is kept for Storm's sake).

        .. versionadded:: 0.2.0
        """
        entry = {"class": consumer, "argument": argument, "parallelism.hint": parallelism_hint}
        self[TOPOLOGY_METRICS_CONSUMER_REGISTER] = [
            *self.get(TOPOLOGY_METRICS_CONSUMER_REGISTER, []),
            entry,
        ]

    def set_debug(self, debug: bool) -> None:
        """Set ``topology.debug``: every emit, ack and fail logged (``sparkstorm.debug``).

        Set in a component's own configuration, it applies to that component only.
        """
        self[TOPOLOGY_DEBUG] = debug


def parse_value(key: str, raw: str) -> Any:
    """A command-line string as the value ``key`` takes.

    A known key parses to its kind (``false``, ``False``, ``0`` and ``no`` are False;
    ``none`` is None where None is allowed; a list is JSON or comma-separated); any
    other key's value parses as JSON when it can, else stays a string.
    """
    kind = KINDS.get(key)
    if kind is not None:
        try:
            return kind.parse(raw)
        except ValueError:
            return raw  # the check names the key and what it takes
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def check_key(key: str) -> None:
    """Reject a key in Storm's or sparkstorm's namespace that neither knows.

    Raises
    ------
    InvalidTopologyError
        Naming the key and the nearest known key.
    """
    if not isinstance(key, str):
        msg = f"config key {key!r} is not a string; keys are names such as {TOPOLOGY_NAME!r}"
        raise InvalidTopologyError(msg)
    if key in KINDS or not key.startswith(RESERVED_PREFIXES):
        return
    if key in STORM_KEYS_WITHOUT_EFFECT:
        log.warning("config key %r has no effect on sparkstorm; it is ignored", key)
        return
    near = difflib.get_close_matches(key, list(KINDS), n=1, cutoff=0.6)
    hint = f"did you mean {near[0]!r}? " if near else ""
    msg = (
        f"unknown config key {key!r}: {hint}Keys under {', '.join(RESERVED_PREFIXES)} "
        f"must be ones sparkstorm knows (docs/configuration.md); put your own settings "
        f"under a prefix of your own, such as 'myapp.'"
    )
    raise InvalidTopologyError(msg)


def check_value(key: str, value: Any, where: str = "") -> None:
    """Reject a known key's value of the wrong kind, naming the key and what it takes."""
    kind = KINDS.get(key)
    if kind is not None and not kind.accepts(value):
        msg = (
            f"config key {key!r}{where} has the invalid value {value!r}: it takes "
            f"{kind.text} (default: {DEFAULTS[key]!r})"
        )
        raise InvalidTopologyError(msg)


def resolve(conf: dict[str, Any] | None) -> dict[str, Any]:
    """Return a new plain dict: :data:`DEFAULTS` overlaid with ``conf``, keys and values checked.

    Raises
    ------
    InvalidTopologyError
        For a key in a reserved namespace that sparkstorm does not know, or a known key
        with a value of the wrong kind; the message names the key.
    """
    for key, value in (conf or {}).items():
        check_key(key)
        check_value(key, value)
    return {**DEFAULTS, **(conf or {})}


def spark_settings(conf: dict[str, Any]) -> dict[str, str]:
    """The ``spark.*`` keys of ``conf``, as strings for a SparkSession builder."""
    return {
        key: str(value).lower() if isinstance(value, bool) else str(value)
        for key, value in conf.items()
        if isinstance(key, str) and key.startswith(SPARK_PREFIX)
    }
