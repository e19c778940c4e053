"""Errors a newcomer meets: unserializable values, Java missing or too old."""

from __future__ import annotations

import os
import re
import stat
import threading

import pytest

from sparkstorm import (
    Bolt,
    ComponentStateError,
    Config,
    Fields,
    InvalidTopologyError,
    SparkStormError,
    TopologyBuilder,
)
from sparkstorm.testing import FeederSpout
from tests.scenarios.bolts import Ack


class EmitsALock(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit([tup[0], threading.Lock()], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word", "lock"))


class Sink(Bolt):
    def execute(self, tup):
        pass


def test_unserializable_value_names_component_stream_and_field(engine, cluster_factory):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("word"))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("locker", EmitsALock()).shuffle_grouping("in")
    builder.set_bolt("sink", Sink()).shuffle_grouping("locker")
    conf = Config()
    conf[Config.TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE] = True  # the local engine checks too
    cluster.submit_topology("lock", conf, builder.create_topology())
    feeder.feed(["a"], 1)
    expected = (
        "component 'locker' emitted a value that cannot be serialized on stream "
        "'default', field 'lock': lock"
    )
    with pytest.raises(InvalidTopologyError, match=re.escape(expected)):
        cluster.wait_until_idle()


def fake_java(tmp_path, version_line: str) -> str:
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return str(home)


def test_java_too_old_says_what_to_install(tmp_path, monkeypatch):
    from sparkstorm.engines.spark import check_java

    monkeypatch.setenv("JAVA_HOME", fake_java(tmp_path, 'openjdk version "11.0.2" 2019-01-15'))
    with pytest.raises(
        SparkStormError,
        match=r"needs Java 17\+, but .* is Java 11; install "
        r"OpenJDK 17",
    ):
        check_java()
    monkeypatch.setenv("JAVA_HOME", fake_java(tmp_path / "old", 'java version "1.8.0_292"'))
    with pytest.raises(SparkStormError, match="is Java 8"):
        check_java()


def test_java_missing_says_what_to_install(tmp_path, monkeypatch):
    from sparkstorm.engines.spark import check_java

    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(SparkStormError, match="no java was found; install OpenJDK 17"):
        check_java()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SparkStormError, match="no java was found"):
        check_java()
    assert os.environ["PATH"] == str(tmp_path)


def test_java_17_passes(tmp_path, monkeypatch):
    from sparkstorm.engines.spark import check_java

    monkeypatch.setenv("JAVA_HOME", fake_java(tmp_path, 'openjdk version "17.0.15" 2025-04-15'))
    check_java()


class LockInInit(Bolt):
    def __init__(self):
        self.lock = threading.Lock()

    def execute(self, tup):
        pass


class LockInPrepare(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector
        self.lock = threading.Lock()

    def execute(self, tup):
        self.collector.ack(tup)


@pytest.mark.parametrize(
    ("bolt", "expected"),
    [
        (LockInInit, "component 'locked' (LockInInit) cannot be copied to its tasks"),
        (LockInPrepare, "bolt 'locked' (task 3): attribute 'lock' (lock) cannot be pickled"),
    ],
)
def test_a_bolt_spark_cannot_ship_is_named_on_both_engines(engine, cluster_factory, bolt, expected):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("word"))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("locked", bolt()).shuffle_grouping("in")
    conf = Config({Config.TOPOLOGY_TESTING_ALWAYS_TRY_SERIALIZE: True})
    with pytest.raises(ComponentStateError, match=re.escape(expected)) as info:
        cluster.submit_topology("locks", conf, builder.create_topology())
        feeder.feed(["a"], 1)
        cluster.wait_until_idle()
    assert "Java" not in str(info.value) and "\tat " not in str(info.value)


@pytest.mark.parametrize("method", ["fields_grouping", "partial_key_grouping"])
def test_storms_java_argument_order_is_named_with_the_python_one(method):
    builder = TopologyBuilder()
    declarer = builder.set_bolt("count", Ack())
    with pytest.raises(InvalidTopologyError) as said:
        getattr(declarer, method)("split", "words", Fields("word"))
    message = str(said.value)
    assert "Storm's Java arguments, (component, stream, fields)" in message
    assert f"{method}('split', Fields('word'), 'words')" in message
