"""Configuration: every known key type-checked, command-line strings parsed, typos caught."""

from __future__ import annotations

import math

import pytest

from sparkstorm import Config, InvalidTopologyError
from sparkstorm.config import (
    DEFAULTS,
    KINDS,
    parse_value,
    provider_config,
    resolve,
    spark_settings,
    state_provider,
)


def test_every_default_is_a_value_its_key_accepts():
    assert set(KINDS) == set(DEFAULTS)
    for key, value in DEFAULTS.items():
        assert KINDS[key].accepts(value), key


@pytest.mark.parametrize(
    ("key", "raw", "expected"),
    [
        (Config.TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS, "False", False),
        (Config.TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS, "false", False),
        (Config.TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS, "0", False),
        (Config.TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS, "yes", True),
        (Config.TOPOLOGY_ACKER_EXECUTORS, "2", 2),
        (Config.TOPOLOGY_MESSAGE_TIMEOUT_SECS, "1.5", 1.5),
        (Config.TOPOLOGY_MAX_SPOUT_PENDING, "none", None),
        (Config.SPARKSTORM_CAPTURE, "split,count", ["split", "count"]),
        (Config.SPARKSTORM_CAPTURE, '["split"]', ["split"]),
        (Config.TOPOLOGY_NAME, "123", "123"),
        ("myapp.retries", "3", 3),
        ("myapp.url", "amqp://x", "amqp://x"),
    ],
)
def test_command_line_strings_parse_to_the_keys_type(key, raw, expected):
    value = parse_value(key, raw)
    assert value == expected and type(value) is type(expected)
    resolve({key: value})


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"topology.acker.executor": 2}, "did you mean 'topology.acker.executors'?"),
        ({"sparkstorm.sed": 1}, "did you mean 'sparkstorm.seed'?"),
        ({"storm.zookeeper.servers": []}, "unknown config key 'storm.zookeeper.servers'"),
        ({Config.TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS: "False"}, "takes true or false"),
        ({Config.TOPOLOGY_MESSAGE_TIMEOUT_SECS: math.nan}, "takes a number of seconds > 0"),
        ({Config.TOPOLOGY_MESSAGE_TIMEOUT_SECS: True}, "invalid value True"),
        ({Config.TOPOLOGY_ACKER_EXECUTORS: -1}, "takes an integer >= 0"),
        ({Config.SPARKSTORM_CAPTURE: "count"}, "takes a list of component ids"),
        ({Config.SPARKSTORM_IDLE_GRACE_SECS: -1}, "takes a number of seconds >= 0"),
    ],
)
def test_typos_and_wrong_kinds_are_rejected_naming_the_key(conf, message):
    with pytest.raises(InvalidTopologyError, match="config key") as info:
        resolve(conf)
    assert message in str(info.value)


def test_users_own_keys_pass_through_and_storm_only_keys_are_accepted(caplog):
    merged = resolve({"myapp.db.url": "postgresql://x", "topology.workers": 4})
    assert merged["myapp.db.url"] == "postgresql://x"
    assert merged[Config.TOPOLOGY_ACKER_EXECUTORS] == 1
    assert "'topology.workers' has no effect on sparkstorm" in caplog.text


def test_config_starts_empty_and_spark_settings_are_picked_out():
    assert Config() == {}
    conf = {"spark.ui.enabled": True, "spark.executor.memory": "2g", "myapp.x": 1}
    assert spark_settings(conf) == {"spark.ui.enabled": "true", "spark.executor.memory": "2g"}


def test_state_keys_have_storms_defaults_and_are_checked():
    assert DEFAULTS["topology.state.checkpoint.interval.ms"] == 1000
    assert DEFAULTS["topology.state.provider"] is None  # not named: memory for stateful bolts
    assert state_provider(resolve({})) == "memory"
    with pytest.raises(InvalidTopologyError, match=r"topology\.state\.provider"):
        resolve({"topology.state.provider": "hbase"})
    conf = resolve({"topology.state.provider.config": '{"path": "/tmp/x"}'})
    assert provider_config(conf) == {"path": "/tmp/x"}
