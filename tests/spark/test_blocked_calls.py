"""A bolt that blocks in a Spark executor is reported while it blocks, and a stop cancels it."""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from sparkstorm import Config, Fields, TopologyBuilder
from sparkstorm.testing import FeederSpout
from tests.conftest import run_on
from tests.spark import bolts
from tests.spark.bolts import Sleepy, SlowPrepare

BOLTS = Path(bolts.__file__)

pytestmark = pytest.mark.spark


def topology(secs, timeout=60):
    feeder = FeederSpout(Fields("x"))
    for i in range(3):
        feeder.feed([i], i)
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("sleepy", Sleepy(secs)).shuffle_grouping("in")
    conf = Config({Config.SPARKSTORM_WATCHDOG_SECS: 1})
    conf.set_message_timeout_secs(timeout)
    return builder.create_topology(), conf, feeder


def test_a_bolt_blocking_in_an_executor_is_reported_by_task_and_where_it_waits(spark, caplog):
    topo, conf, feeder = topology(secs=3)
    with caplog.at_level(logging.WARNING):
        result = run_on("spark", topo, conf, spark, until_idle=True)
    assert sorted(feeder.acked) == [0, 1, 2]  # it came back: the run went on
    reports = [r.getMessage() for r in caplog.records if "has not returned" in r.getMessage()]
    assert len(reports) == 1, reports  # once per blocked call
    head, _, stack = reports[0].partition("; it is at:\n")
    assert re.fullmatch(
        r"execute\(\) of bolt 'sleepy' task \d+ has not returned for 1 s in a Spark executor "
        r"\(Python worker \d+ on \S+\): it must not block .*",
        head,
    ), head
    frames = re.findall(r'File "([^"]+)", line \d+, in (\w+)', stack)
    assert frames == [(str(BOLTS), "execute"), (str(BOLTS), "wait_here")]  # the user's own
    assert not result.errors


def test_a_prepare_blocking_in_an_executor_is_reported_too(spark, caplog):
    feeder = FeederSpout(Fields("x"))
    feeder.feed([0], 0)
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("slow", SlowPrepare(3)).shuffle_grouping("in")
    conf = Config({Config.SPARKSTORM_WATCHDOG_SECS: 1})
    with caplog.at_level(logging.WARNING):
        run_on("spark", builder.create_topology(), conf, spark, until_idle=True)
    assert feeder.acked == [0]
    reports = [r.getMessage() for r in caplog.records if "has not returned" in r.getMessage()]
    # once per blocked call: a task prepares once in each Python worker it runs in
    workers = [re.search(r"\(Python worker (\d+) on", r).group(1) for r in reports]
    assert reports and len(set(workers)) == len(workers), reports
    head, _, stack = reports[0].partition("; it is at:\n")
    assert re.match(r"prepare\(\) of bolt 'slow' task \d+ has not returned for 1 s in a Spa", head)
    frames = re.findall(r'File "([^"]+)", line \d+, in (\w+)', stack)
    assert frames == [(str(BOLTS), "prepare"), (str(BOLTS), "wait_here")]


def test_the_first_ctrl_c_cancels_a_superstep_a_bolt_blocks(spark):
    topo, conf, feeder = topology(secs=600, timeout=5)  # the stop's drain waits 5 s at most
    runtimes = []

    def interrupt_once_blocked():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if runtimes and runtimes[0].engine.blocked is not None:
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.1)

    threading.Thread(target=interrupt_once_blocked, daemon=True).start()
    started = time.monotonic()
    result = run_on("spark", topo, conf, spark, on_start=runtimes.append)
    assert time.monotonic() - started < 60  # not the bolt's 600 s
    assert result.interrupted
    messages = [e.message for e in result.errors]
    call = r"execute\(\) of bolt 'sleepy' task \d+"
    assert any(re.fullmatch(f"the stop interrupted {call}, which had blocked", m) for m in messages)
    cancelled = rf"superstep \d+ cancelled at the stop: {call} had blocked"
    assert any(re.fullmatch(cancelled, m) for m in messages), messages
    # every message has an outcome: the blocked tree's tuple died with the superstep
    assert sorted(feeder.acked + feeder.failed) == [0, 1, 2]
