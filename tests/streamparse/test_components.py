"""streamparse's classes on sparkstorm: one component at a time, and the topology DSL."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from sparkstorm import FailReason, InvalidTopologyError
from sparkstorm.streamparse import (
    BatchingBolt,
    Bolt,
    Grouping,
    JavaBolt,
    ReliableSpout,
    ShellBolt,
    Spout,
    Stream,
    TicklessBatchingBolt,
    Topology,
    to_topology,
)
from sparkstorm.testing import prepared, test_tuple
from sparkstorm.topology.tuple import tick_tuple


class Words(Spout):
    outputs = ["word"]

    def next_tuple(self):
        self.emit(["w"])


class Echo(Bolt):
    outputs = ["word", "n"]

    def process(self, tup):
        self.emit([tup.values.word, tup.values.n + 1])


def test_a_bolt_gets_named_values_and_acks_and_anchors_by_default():
    bolt, collector = prepared(Echo(), component="echo")
    tup = test_tuple(["cat", 1], component="words", fields=["word", "n"])
    bolt.execute(tup)
    assert collector.emitted == [("default", ["cat", 2])]
    assert collector.emits[0].anchors == [tup]  # auto_anchor
    assert collector.acked_tuples == [tup]  # auto_ack
    assert (bolt.component_name, bolt.task_id, bolt.topology_name) == ("echo", 2, "")
    assert bolt.context["componentid"] == "echo" and bolt.context.get_this_task_index() == 0


def test_explicit_acks_fails_and_anchors_follow_the_tuple_or_its_id():
    class Manual(Bolt):
        outputs = ["v"]
        auto_ack = False
        auto_anchor = False

        def initialize(self, conf, ctx):
            self.held = []

        def process(self, tup):
            self.held.append(tup)
            if len(self.held) == 2:
                first, second = self.held
                self.emit(["both"], anchors=[first, second.id])
                self.ack(first)
                self.fail(second.id)

    bolt, collector = prepared(Manual())
    one, two = test_tuple(["a"]), test_tuple(["b"])
    bolt.execute(one)
    assert collector.acked == 0 and collector.emits == []
    bolt.execute(two)
    assert collector.emits[0].anchors == [one, two]
    assert collector.acked_tuples == [one] and collector.failed_tuples == [two]
    with pytest.raises(ValueError, match="acked or failed already"):
        bolt.ack(bolt.held[0])


def test_a_raising_process_fails_its_tuple_through_the_engine_or_leaves_it_without_auto_fail():
    class Raises(Bolt):
        def process(self, tup):
            raise KeyError("boom")

    bolt, collector = prepared(Raises())
    with pytest.raises(KeyError):  # the engine reports it and fails the tuple
        bolt.execute(test_tuple(["a"]))
    assert bolt._pending == {} and collector.acked == 0

    class Quiet(Raises):
        auto_fail = False

    bolt, collector = prepared(Quiet())
    bolt.execute(test_tuple(["a"]))
    assert [type(e) for e in collector.errors] == [KeyError]
    assert collector.acked == 0 and collector.failed == 0 and len(bolt._pending) == 1


def test_ticks_go_to_process_tick_and_need_task_ids_returns_the_direct_task():
    class Ticking(Bolt):
        outputs = [Stream(["v"], name="direct", direct=True)]

        def initialize(self, conf, ctx):
            self.ticks = 0

        def process_tick(self, tup):
            self.ticks += 1
            assert self.is_tick(tup)

        def process(self, tup):
            assert self.emit(["v"], stream="direct", direct_task=7, need_task_ids=True) == [7]

    bolt, collector = prepared(Ticking())
    bolt.execute(tick_tuple(1.0))
    bolt.execute(test_tuple(["x"]))
    assert bolt.ticks == 1 and collector.emits[0].task == 7 and collector.acked == 2


class Batcher(BatchingBolt):
    outputs = ["word", "count"]
    config = {"topology.tick.tuple.freq.secs": 1}

    def group_key(self, tup):
        return tup.values[0]

    def process_batch(self, key, tups):
        if key == "bad":
            raise ValueError("bad batch")
        self.emit([key, len(tups)])


def test_a_batching_bolt_processes_its_batches_every_second_tick_as_pystorm():
    bolt, collector = prepared(Batcher())
    inputs = [test_tuple([w]) for w in ["a", "b", "a"]]
    for tup in inputs:
        bolt.execute(tup)
    bolt.execute(tick_tuple(1.0))
    assert collector.emits == []  # ticks_between_batches = 1: the second tick processes
    bolt.execute(tick_tuple(1.0))
    assert sorted(collector.emitted) == [("default", ["a", 2]), ("default", ["b", 1])]
    by_key = {e.values[0]: e.anchors for e in collector.emits}
    assert by_key["a"] == [inputs[0], inputs[2]]  # anchored to the whole batch
    assert set(map(id, collector.acked_tuples)) >= set(map(id, inputs))


def test_a_raising_batch_fails_its_own_tuples_and_the_rest_wait_for_the_next_tick():
    bolt, collector = prepared(Batcher())
    bad, good = test_tuple(["bad"]), test_tuple(["good"])
    bolt.execute(bad)
    bolt.execute(good)
    bolt.execute(tick_tuple(1.0))
    with pytest.raises(ValueError, match="bad batch"):
        bolt.execute(tick_tuple(1.0))
    assert collector.failed_tuples == [bad] and collector.emits == []
    bolt.execute(tick_tuple(1.0))
    bolt.execute(tick_tuple(1.0))
    assert collector.emitted == [("default", ["good", 1])]


def test_a_batching_bolt_without_ticks_is_refused_by_name_and_a_tickless_one_asks_for_them():
    class NoTicks(Batcher):
        config = None

    with pytest.raises(ValueError, match=r"NoTicks 'counts' gets no tick tuples"):
        prepared(NoTicks(), component="counts")

    class Timed(TicklessBatchingBolt):
        outputs = ["n"]
        secs_between_batches = 0.5

        def process_batch(self, key, tups):
            self.emit([len(tups)])

    bolt, collector = prepared(Timed())
    assert bolt.storm_conf["topology.tick.tuple.freq.secs"] == 0.5
    bolt.execute(test_tuple(["x"]))
    bolt.execute(tick_tuple(0.5))  # every tick processes
    assert collector.emitted == [("default", [1])]


class Replaying(ReliableSpout):
    outputs = ["v"]
    max_fails = 2


def _opened_spout(spout):
    from sparkstorm.config import resolve
    from sparkstorm.testing.complete import FixedTupleSpout
    from sparkstorm.topology.builder import TopologyBuilder
    from sparkstorm.topology.context import TopologyContext
    from sparkstorm.topology.plan import Plan

    class Emits:
        def __init__(self):
            self.emitted = []

        def emit(self, values, msg_id=None, stream="default"):
            self.emitted.append((values, msg_id))
            return [3]

    builder = TopologyBuilder()
    builder.set_spout("s", spout)
    builder.set_spout("other", FixedTupleSpout([]))
    plan = Plan(builder.create_topology(), resolve({}))
    collector = Emits()
    spout.open({}, TopologyContext(plan, plan.component_tasks("s")[0], {}), collector)
    return collector


def test_a_reliable_spout_replays_its_own_failures_up_to_max_fails_and_others_freely():
    spout = Replaying()
    collector = _opened_spout(spout)
    spout.emit(["x"], tup_id="m")
    spout.fail("m", FailReason("rollback"))  # not the message's fault: not counted
    spout.fail("m", FailReason("error", "b", 1, "boom"))
    spout.fail("m")
    assert [m for _, m in collector.emitted] == ["m"] * 4
    spout.fail("m", FailReason("timeout"))  # the third failure of its own: given up
    assert len(collector.emitted) == 4 and spout.unacked_tuples == {}
    with pytest.raises(ValueError, match="must provide a tuple ID"):
        spout.emit(["y"])


def test_the_dsl_checks_as_streamparse_does_and_jvm_parts_are_refused_by_name():
    with pytest.raises(ValueError, match="'nope' specified in grouping is not a valid"):

        class BadField(Topology):
            words = Words.spec()
            echo = Echo.spec(inputs={words: Grouping.fields("nope")})

    class WithJava(Topology):
        words = Words.spec()
        tagger = JavaBolt.spec(full_class_name="com.example.Tagger", args_list=[], inputs=[words])

    with pytest.raises(InvalidTopologyError, match=r"'tagger' is a JavaBolt \(com.example"):
        to_topology(WithJava)

    class WithShell(Topology):
        words = Words.spec()
        ruby = ShellBolt.spec(command="ruby", script="tag.rb", inputs=[words])

    with pytest.raises(InvalidTopologyError, match=r"'ruby' is a ShellBolt \(ruby tag.rb\)"):
        to_topology(WithShell)

    class PerEnvironment(Topology):
        words = Words.spec(par={"prod": 4, "beta": 2})

    topology, _ = to_topology(PerEnvironment, "beta")
    assert topology.components["words"].num_tasks == 2
    with pytest.raises(InvalidTopologyError, match=r"'words': par .* no entry for env.* 'dev'"):
        to_topology(PerEnvironment, "dev")


def test_inputs_as_a_list_a_dict_or_named_streams_become_sparkstorm_groupings():
    class Split(Bolt):
        outputs = [Stream(["word"]), Stream(["line"], name="errors")]

        def process(self, tup):
            pass

    class Flow(Topology):
        config = {"topology.max.spout.pending": 5}
        words = Words.spec(name="source")
        split = Split.spec(inputs=[words], par=3, config={"myapp.flag": True})
        errors = Echo.spec(inputs={split["errors"]: Grouping.ALL, split: Grouping.fields("word")})
        total = Echo.spec(inputs={split: Grouping.GLOBAL})

    topology, conf = to_topology(Flow)
    assert conf == {"topology.max.spout.pending": 5}
    split = topology.components["split"]
    assert split.num_tasks == 3 and split.conf["myapp.flag"] is True
    kinds = {(s.component_id, s.stream_id): g.kind for s, g in topology.components["errors"].inputs}
    assert kinds == {("split", "errors"): "all", ("split", "default"): "fields"}
    assert [g.kind for _, g in topology.components["total"].inputs] == ["global"]
    assert [s.component_id for s, _ in split.inputs] == ["source"]


def test_the_import_hook_gives_sparkstorm_s_classes_even_with_streamparse_installed():
    code = textwrap.dedent(
        """
        import importlib.metadata, sys
        from sparkstorm.streamparse import install_import_hook
        print(importlib.metadata.version("streamparse"))  # the real one is installed
        install_import_hook()
        import streamparse
        from streamparse.storm import Bolt
        from streamparse.dsl.stream import Grouping
        print(streamparse.__name__, Bolt.__module__, "pystorm" in sys.modules)
        try:
            import streamparse.cli
        except ModuleNotFoundError as exc:
            print(exc)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "5.0.1"
    assert out[1] == "sparkstorm.streamparse sparkstorm.streamparse.components False"
    assert out[2].startswith("No module named 'streamparse.cli': sparkstorm stands in")


def test_a_log_path_gives_each_task_its_own_file_as_pystorm_names_it(tmp_path):
    conf = {"pystorm.log.path": str(tmp_path), "pystorm.log.level": "debug"}
    bolt, _ = prepared(Echo(), conf, component="echo")
    bolt.logger.debug("counted %d words", 7)
    bolt.log("via log()", "warn")
    for handler in bolt.logger.handlers:
        handler.flush()
    (file,) = tmp_path.glob("pystorm__echo_2_*.log")  # topology, component, task, pid
    lines = file.read_text().splitlines()
    assert lines[0].endswith("pystorm.component.echo - DEBUG - counted 7 words")
    assert lines[1].endswith("WARNING - via log()")
    for handler in list(bolt.logger.handlers):
        bolt.logger.removeHandler(handler)
        handler.close()
