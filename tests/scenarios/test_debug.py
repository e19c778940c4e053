"""``topology.debug``: a line per emit, ack and fail, from the components that set it."""

from __future__ import annotations

import logging
import re

from sparkstorm import Config, Fields, TopologyBuilder
from sparkstorm.testing import FeederSpout
from tests.scenarios.bolts import Fail, Identity

TUPLE = r"Tuple\(source=(\w+):\d+, stream='default', values=\[7\]\)"


def debug_lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "sparkstorm.debug"]


def run_one(engine, cluster_factory, caplog, conf, echo_debug):
    cluster = cluster_factory(engine)
    feeder = FeederSpout(Fields("num"))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    echo = builder.set_bolt("echo", Identity()).shuffle_grouping("in")
    if echo_debug:
        echo.add_configuration(Config.TOPOLOGY_DEBUG, True)
    builder.set_bolt("sink", Fail()).shuffle_grouping("echo")
    with caplog.at_level(logging.INFO, logger="sparkstorm.debug"):
        cluster.submit_topology("debug", conf, builder.create_topology())
        feeder.feed([7], "m7")
        cluster.wait_until_idle()
    assert feeder.failed == ["m7"]
    return debug_lines(caplog)


def test_one_components_debug_logs_only_its_emits_and_acks(engine, cluster_factory, caplog):
    lines = run_one(engine, cluster_factory, caplog, Config(), echo_debug=True)
    assert len(lines) == 2, lines  # nothing from the spout or the sink
    assert lines[0] == "Emitting: echo default [7]"
    assert re.fullmatch(rf"BOLT ack TASK: \d+ TIME: \d+ TUPLE: {TUPLE}", lines[1]), lines[1]


def test_topology_debug_logs_every_component_and_the_spouts_outcome(
    engine, cluster_factory, caplog
):
    conf = Config()
    conf.set_debug(True)
    lines = run_one(engine, cluster_factory, caplog, conf, echo_debug=False)
    assert "Emitting: in default [7] 'm7'" in lines
    assert "Emitting: echo default [7]" in lines
    fails = [line for line in lines if line.startswith("BOLT fail")]
    assert len(fails) == 1 and "TUPLE: Tuple(source=echo:" in fails[0]
    assert "(explicit by sink:" in fails[0]
    spout_lines = [line for line in lines if line.startswith("SPOUT")]
    assert len(spout_lines) == 1, lines
    assert re.fullmatch(r"SPOUT Failing 'm7': explicit by sink:\d+", spout_lines[0]), lines
    if engine != "continuous":  # there, the lines come from two workers' reports
        assert lines[-1] == spout_lines[0]
    assert not any("__acker" in line for line in lines)
