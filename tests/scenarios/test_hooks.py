"""Storm's task hooks: topology.auto.task.hooks and context.add_task_hook, on every engine."""

from __future__ import annotations

from collections import Counter

import pytest

from sparkstorm import Bolt, Config, Fields, InvalidTopologyError, Spout, TopologyBuilder
from sparkstorm.topology.hooks import BaseTaskHook
from tests.conftest import run_on

N = 20


class Numbers(Spout):
    def open(self, conf, context, collector):
        self.collector, self.n = collector, 0

    def next_tuple(self):
        if self.n < N:
            self.collector.emit([self.n], self.n)
            self.n += 1

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class EvensOnly(Bolt):
    """Passes even numbers on and acks them; fails odd ones. Adds a hook of its own."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        context.add_task_hook(Recording("own"))

    def execute(self, tup):
        if tup[0] % 2:
            self.collector.fail(tup)
            return
        self.collector.emit([tup[0]], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class Last(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


class Recording(BaseTaskHook):
    """Appends a line per call to the file the conf names (tasks may run in workers)."""

    def __init__(self, tag="auto"):
        self.tag = tag

    def prepare(self, conf, context):
        self.file = open(conf["test.hooks.file"], "a", buffering=1)  # noqa: SIM115
        self.where = context.get_this_component_id()
        self.write("prepare", "")

    def write(self, kind, detail):
        self.file.write(f"{self.tag} {self.where} {kind} {detail}\n")

    def emit(self, info):
        self.write("emit", f"{info.stream}:{info.values[0]}:{len(info.out_tasks)}")

    def spout_ack(self, info):
        self.write("spout_ack", f"{info.message_id}:{info.complete_latency_ms >= 0}")

    def spout_fail(self, info):
        self.write("spout_fail", info.message_id)

    def bolt_execute(self, info):
        self.write("bolt_execute", f"{info.tuple[0]}:{info.execute_latency_ms >= 0}")

    def bolt_ack(self, info):
        self.write("bolt_ack", info.tuple[0])

    def bolt_fail(self, info):
        self.write("bolt_fail", info.tuple[0])

    def cleanup(self):
        self.write("cleanup", "")
        self.file.close()


def test_hooks_see_every_emit_ack_fail_and_execute(engine, spark, tmp_path):
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers())
    builder.set_bolt("evens", EvensOnly(), 2).shuffle_grouping("numbers")
    builder.set_bolt("last", Last()).shuffle_grouping("evens")
    conf = Config()
    conf["topology.auto.task.hooks"] = [Recording]
    conf["test.hooks.file"] = str(tmp_path / "hooks.txt")
    result = run_on(engine, builder.create_topology(), conf, spark, until_idle=True, duration=60)
    assert result.stats["numbers"]["acked"] == N // 2
    lines = (tmp_path / "hooks.txt").read_text().splitlines()
    seen = Counter(" ".join(line.split()[:3]) for line in lines)
    half = N // 2
    assert seen["auto numbers emit"] == N
    assert seen["auto numbers spout_ack"] == half and seen["auto numbers spout_fail"] == half
    assert seen["auto evens bolt_execute"] == N and seen["own evens bolt_execute"] == N
    assert seen["auto evens emit"] == half and seen["auto evens bolt_ack"] == half
    assert seen["auto evens bolt_fail"] == half
    assert seen["auto last bolt_execute"] == half and seen["auto last bolt_ack"] == half
    assert all(line.endswith(":True") for line in lines if " spout_ack " in line)
    assert seen["auto numbers cleanup"] == 1  # closed with the spout
    assert seen["own evens prepare"] >= 2  # one per task (Spark: per worker it ran in)


def test_a_hook_that_does_not_load_is_an_error_at_submit():
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers())
    conf = {"topology.auto.task.hooks": ["no.such.module.Hook"]}
    with pytest.raises(InvalidTopologyError, match=r"cannot load 'no\.such\.module\.Hook'"):
        run_on("local", builder.create_topology(), conf, until_idle=True)
