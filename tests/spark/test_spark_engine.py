"""What only the spark engine has to prove: bolts run in executors, state survives
supersteps (resident or restored), transient attributes, retry-reproducible ids."""

from __future__ import annotations

import os
import pickle
import re

import pytest

from sparkstorm import ComponentStateError, Config, Fields, TopologyBuilder
from sparkstorm.testing import FeederSpout
from tests.conftest import run_on
from tests.scenarios.bolts import Ack, Identity
from tests.spark.bolts import (
    BigStateBolt,
    ClientBolt,
    CountAndHold,
    LeakyClientBolt,
    PidBolt,
    RaisesOnOdd,
)

pytestmark = pytest.mark.spark


def test_bolt_code_never_runs_in_the_driver(cluster_factory):
    cluster = cluster_factory("spark")
    feeder = FeederSpout(Fields("x"))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("pid", PidBolt(), 2).shuffle_grouping("in")
    cluster.submit_topology("pid", Config(), builder.create_topology(), capture=True)
    for i in range(10):
        feeder.feed([i], i)
    cluster.wait_until_idle()
    pids = {values[0] for values in cluster.captured("pid", "pid")}
    assert len(cluster.captured("pid", "pid")) == 10
    assert os.getpid() not in pids and pids
    assert sorted(feeder.acked) == list(range(10))


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "restored"])
def test_counts_and_held_tuples_survive_supersteps(cluster_factory, resident):
    cluster = cluster_factory("spark")
    feeder = FeederSpout(Fields("word"))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("count", CountAndHold()).global_grouping("in")
    conf = Config()
    conf[Config.SPARKSTORM_SPARK_RESIDENT] = resident
    cluster.submit_topology("state", conf, builder.create_topology(), capture=True)
    for i, word in enumerate(["a", "b", "a"]):
        feeder.feed([word], i)
        cluster.wait_until_idle()  # each word in its own superstep(s)
    assert feeder.acked == []
    feeder.feed(["flush"], "f")
    cluster.wait_until_idle()
    assert cluster.captured("state", "count") == [[{"a": 2, "b": 1}, 3]]
    assert sorted(feeder.acked, key=str) == [0, 1, 2, "f"]


def test_state_is_pickled_only_after_supersteps_the_task_ran_and_its_bytes_are_counted(
    cluster_factory,
):
    cluster = cluster_factory("spark")
    busy, once = FeederSpout(Fields("x")), FeederSpout(Fields("x"))
    builder = TopologyBuilder()
    builder.set_spout("busy_in", busy)
    builder.set_spout("once_in", once)
    builder.set_bolt("busy", BigStateBolt()).shuffle_grouping("busy_in")
    builder.set_bolt("once", BigStateBolt()).shuffle_grouping("once_in")
    cluster.submit_topology("bytes", Config(), builder.create_topology())
    once.feed([0], "only")
    for i in range(4):
        busy.feed([i], i)
        cluster.wait_until_idle()  # each input in a superstep of its own
    stats = cluster.stats("bytes")
    assert sorted(busy.acked) == [0, 1, 2, 3] and once.acked == ["only"]
    assert stats["busy"]["snapshots"] == 4
    assert stats["once"]["snapshots"] == 1  # idle since: its state row passed through
    for bolt in ("busy", "once"):
        assert 100_000 < stats[bolt]["state_bytes"] < 101_000
        per_snapshot = stats[bolt]["snapshot_bytes"] / stats[bolt]["snapshots"]
        assert per_snapshot == pytest.approx(stats[bolt]["state_bytes"], rel=0.01)
    supersteps = cluster._runtime("bytes").supersteps_run  # the ones that ran a job
    assert stats["busy"]["snapshot_bytes_per_superstep"] == round(
        stats["busy"]["snapshot_bytes"] / supersteps
    )
    assert stats["__acker"]["snapshots"] >= 4  # the acker's pending trees are state too


def test_transient_client_is_recreated_by_prepare(cluster_factory):
    cluster = cluster_factory("spark")
    feeder = FeederSpout(Fields("x"))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("client", ClientBolt()).shuffle_grouping("in")
    conf = Config()
    conf[Config.SPARKSTORM_SPARK_RESIDENT] = False  # every superstep restores
    cluster.submit_topology("transient", conf, builder.create_topology(), capture=True)
    for i in range(3):
        feeder.feed([i], i)
        cluster.wait_until_idle()
    assert cluster.captured("transient", "client") == [[1], [2], [3]]
    assert feeder.acked == [0, 1, 2]
    assert cluster.errors("transient") == []


def test_unpicklable_attribute_names_itself_and_transient(spark, cluster_factory):
    before = persisted_rdds(spark)
    cluster = cluster_factory("spark")
    feeder = FeederSpout(Fields("x"))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("leaky", LeakyClientBolt()).shuffle_grouping("in")
    cluster.submit_topology("leaky", Config(), builder.create_topology())
    feeder.feed([1], 1)
    with pytest.raises(
        ComponentStateError, match=re.escape("bolt 'leaky' (task 3): attribute 'client'")
    ) as err:
        cluster.wait_until_idle()
    assert "add it to `transient`" in str(err.value)
    cluster.shutdown()
    assert persisted_rdds(spark) <= before  # the failed superstep's plan left nothing


def persisted_rdds(spark) -> set[int]:
    """The ids of the RDDs Spark holds blocks of (local checkpoints among them)."""
    return set(spark.sparkContext._jsc.getPersistentRDDs().keys())


def test_a_retried_superstep_reproduces_the_same_ids():
    """Run one superstep's task function twice on the same input, as a Spark retry would."""
    import pyarrow as pa

    from sparkstorm.config import resolve
    from sparkstorm.engines.rows import DRIVER_ORD, KIND_TUPLES, RowCodec, new_columns
    from sparkstorm.engines.spark import executor as engine
    from sparkstorm.engines.user_code import UserCode
    from sparkstorm.reliability.ids import id_source
    from sparkstorm.tasks.spout_task import SpoutTask
    from sparkstorm.topology.plan import Plan
    from tests.scenarios.bolts import Branching

    feeder = FeederSpout(Fields("x"))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("branch", Branching(3), 2).shuffle_grouping("in")
    builder.set_bolt("ack", Ack()).shuffle_grouping("branch")
    plan = Plan(builder.create_topology(), resolve({Config.SPARKSTORM_SEED: 11}))
    spout = SpoutTask(plan, plan.component_tasks("in")[0], seed=11)
    spout.open()
    for i in range(5):
        feeder.feed([i], i)
    spout.begin(superstep=4, now=0.0)
    spout.next_batch(100)
    rows = spout.drain()
    codec = RowCodec(plan)
    columns = new_columns()
    codec.envelopes(rows, DRIVER_ORD, KIND_TUPLES, columns)
    table = pa.Table.from_pydict(columns)

    plan.deal(2)

    class Broadcast:  # as the driver broadcasts it: its import folders, then the plan
        value = (UserCode(), pickle.dumps((plan, 11)))

    def attempt():
        engine._RESIDENT.clear()
        engine._PLANS.clear()
        outputs = []
        for task in plan.component_tasks("branch"):
            batch = table.filter(pa.compute.equal(table["task"], task)).to_batches()
            for out in engine.run_partition(
                iter(batch),
                run_id="r",
                plan_bytes=Broadcast,
                superstep=5,
                now=1.0,
                capture=frozenset(),
            ):
                cols = out.to_pydict()
                outputs += [
                    (t, p)
                    for t, k, p in zip(cols["task"], cols["kind"], cols["payload"], strict=True)
                    if k == KIND_TUPLES
                ]
        return outputs

    first, second = attempt(), attempt()
    assert first == second and len(first) >= 2
    roots = {
        root
        for _, payload in first
        for *_, roots_list in pickle.loads(payload)
        for r in roots_list
        if r
        for root in r
    }
    assert roots  # the children carry edge ids, and the same ones both times
    assert id_source(11, 5, 2)() == id_source(11, 5, 2)()


def engine_with_three_emitted(spark, builder, *, pipeline, **conf):
    """A started Spark engine for ``builder``'s topology, and its spout ``in`` holding the
    rows of three messages (0, 1, 2) to drain into the first superstep."""
    from sparkstorm.config import resolve
    from sparkstorm.engines.spark import SparkEngine
    from sparkstorm.tasks.spout_task import SpoutTask
    from sparkstorm.topology.plan import Plan

    plan = Plan(
        builder.create_topology(), resolve({Config.SPARKSTORM_SPARK_PIPELINE: pipeline, **conf})
    )
    engine = SparkEngine(spark)
    engine.start(plan, 0, frozenset())
    spout = SpoutTask(plan, plan.component_tasks("in")[0], seed=0)
    spout.open()
    for i in range(3):
        spout.spout.feed([i], i)
    spout.begin(0, 0.0)
    spout.next_batch(10)
    return engine, spout


@pytest.mark.parametrize("pipeline", [True, False], ids=["pipelined", "in-step"])
def test_pipelined_superstep_returns_the_one_before(spark, pipeline):
    """Pipelined, a superstep call launches its job and hands back the previous one's result."""
    builder = TopologyBuilder()
    builder.set_spout("in", FeederSpout(Fields("num")))
    builder.set_bolt("ack", Ack()).shuffle_grouping("in")
    engine, spout = engine_with_three_emitted(spark, builder, pipeline=pipeline)
    results = [engine.superstep(spout.drain(), 0, 0.0)]  # the bolt runs and acks
    assert engine.busy is pipeline
    while engine.busy or results[-1].in_flight:
        results.append(engine.superstep([], len(results), 0.0))  # the acker decides
    decided = [root for r in results for _, tup in r.spout_rows for root in tup.values[0]]
    assert sorted(decided) == sorted(root for root, _ in spout.pending.items())
    assert len(decided) == 3
    # in-step: results on calls 0 (none yet) and 1; pipelined: one call later each
    assert [bool(r.spout_rows) for r in results] == (
        [False, False, True] if pipeline else [False, True]
    )
    assert engine.stop() == []


def test_checkpoints_of_past_supersteps_are_released(spark, cluster_factory):
    """Each superstep's output is local-checkpointed; only the latest may stay cached."""
    before = persisted_rdds(spark)  # earlier tests' may still be released meanwhile
    cluster = cluster_factory("spark")
    feeder = FeederSpout(Fields("x"))
    builder = TopologyBuilder()
    builder.set_spout("in", feeder)
    builder.set_bolt("ack", Ack()).shuffle_grouping("in")
    cluster.submit_topology("release", Config(), builder.create_topology())
    most = 0
    for i in range(12):  # 12 feeds, each run to idle: dozens of supersteps
        feeder.feed([i], i)
        cluster.wait_until_idle()
        most = max(most, len(persisted_rdds(spark) - before))
    assert sorted(feeder.acked) == list(range(12))
    assert most <= 2  # the held superstep's, and the one being launched
    cluster.kill_topology("release")
    assert not persisted_rdds(spark) - before


def job_descriptions(spark) -> list[str]:
    """Every job's description, from Spark's status store (filled with the UI off too)."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None).iterator()
    found = []
    while jobs.hasNext():
        description = jobs.next().description()
        if description.isDefined():
            found.append(description.get())
    return found


def test_every_job_names_its_topology_and_superstep(spark):
    from examples.word_count import build, generated_sentences

    topology, conf = build(generated_sentences(300), parallelism=1)
    adaptive = spark.conf.get("spark.sql.adaptive.enabled")
    result = run_on("spark", topology, conf, spark, name="described")
    assert result.stats["sentences"]["acked"] == 300
    assert spark.conf.get("spark.sql.adaptive.enabled") == adaptive  # the session's again
    mine = [d for d in job_descriptions(spark) if d.startswith("sparkstorm described")]
    steps = sorted(int(d.rsplit(" ", 1)[1]) for d in mine if "superstep" in d)
    assert len(steps) >= 3 and len(set(steps)) == len(steps)
    assert "sparkstorm described: cleanup" in mine


@pytest.mark.parametrize("engine_name", ["local", "spark"])
def test_tasks_stay_put_prepare_once_per_worker_and_share_resources(spark, engine_name):
    """Tasks move between Python workers from superstep to superstep; a worker that held
    a task before lays the newer state over its instance instead of preparing again."""
    from examples.word_count import SentenceSpout
    from tests.spark.bolts import StayPutBolt

    n = 600
    builder = TopologyBuilder()
    builder.set_spout("in", SentenceSpout([f"s{i}" for i in range(n)]))
    builder.set_bolt("stay", StayPutBolt(), 2).shuffle_grouping("in")
    conf = Config()
    conf[Config.SPARKSTORM_SPOUT_BATCH] = 15  # 40 supersteps and more
    conf[Config.SPARKSTORM_CAPTURE] = ["stay"]
    result = run_on(engine_name, builder.create_topology(), conf, spark)
    rows = result.captured[("stay", "default")]
    assert len(rows) == n and result.supersteps >= 40
    pids = {pid for pid, *_ in rows}
    assert max(prepares for _, _, prepares, *_ in rows) == 1  # once per task per process
    stats = result.stats["stay"]
    assert stats["prepares"] <= 2 * len(pids)
    # the state followed the task wherever it ran: each task counted all its inputs
    seen_per_task = {}
    for _, task, _, seen, *_ in rows:
        seen_per_task[task] = max(seen, seen_per_task.get(task, 0))
    assert sum(seen_per_task.values()) == n
    # one shared object per process, created once there
    for pid in pids:
        mine = [(created, shared) for p, _, _, _, created, shared in rows if p == pid]
        assert {created for created, _ in mine} == {1}
        assert len({shared for _, shared in mine}) == 1
    if engine_name == "local":
        assert stats["prepares"] == 2 and pids == {os.getpid()}


def test_an_until_idle_run_ends_though_a_bolt_ticks_faster_than_a_superstep(spark):
    """Tick-only supersteps keep Spark busy, but a run whose tuples are all done is idle."""
    from tests.state.topology import ReplayingSpout, sentences

    builder = TopologyBuilder()
    builder.set_spout("in", ReplayingSpout(sentences(20)))
    builder.set_bolt("ack", Ack()).shuffle_grouping("in").add_configuration(
        Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 0.01
    )
    topology = builder.create_topology()
    result = run_on("spark", topology, None, spark, until_idle=True, duration=20)
    assert result.stats["in"]["acked"] == 20
    assert result.stats["ack"]["executed"] > 20  # the ticks did run
    assert result.elapsed_secs < 15  # ended idle, not at the duration


@pytest.mark.parametrize(("hops", "calls"), [(16, 1), (0, 3)])
def test_tuples_between_tasks_of_one_partition_are_delivered_in_the_same_superstep(
    spark, hops, calls
):
    """spout -> identity -> ack in one partition: the trees complete in one Spark job, the
    identity's output and then both bolts' acks delivered hop after hop. Without hops
    each delivery waits for the next superstep: the spout's tuples, the identity's
    output (and its acks), the ack bolt's acks."""

    builder = TopologyBuilder()
    builder.set_spout("in", FeederSpout(Fields("num")))
    builder.set_bolt("id", Identity()).shuffle_grouping("in")
    builder.set_bolt("ack", Ack()).shuffle_grouping("id")
    engine, spout = engine_with_three_emitted(
        spark,
        builder,
        pipeline=False,
        **{Config.SPARKSTORM_SPARK_PARTITIONS: 1, Config.SPARKSTORM_SUPERSTEP_HOPS: hops},
    )
    results = [engine.superstep(spout.drain(), 0, 0.0)]
    while results[-1].in_flight:
        results.append(engine.superstep([], len(results), 0.0))
    decided = [root for r in results for _, tup in r.spout_rows for root in tup.values[0]]
    assert sorted(decided) == sorted(root for root, _ in spout.pending.items())
    assert len(decided) == 3 and len(results) == calls
    assert engine.stop() == []


def test_a_tasks_errors_are_throttled_once_whichever_worker_ran_it(spark):
    """A task moves between local[2]'s two Python workers, each with its own throttle;
    the driver throttles again per task: three errors kept and logged, the rest counted."""
    from tests.continuous.components import NumberSpout

    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(60, replay=False))
    builder.set_bolt("odd", RaisesOnOdd()).shuffle_grouping("numbers")
    conf = Config()
    conf[Config.SPARKSTORM_SPOUT_BATCH] = 2  # 30 supersteps and more: the task moves
    conf[Config.TOPOLOGY_MAX_ERROR_REPORT_PER_INTERVAL] = 3
    conf[Config.TOPOLOGY_ERROR_THROTTLE_INTERVAL_SECS] = 3600  # one interval for the run
    result = run_on("spark", builder.create_topology(), conf, spark)
    errors = [e for e in result.errors if e.component == "odd"]
    assert sum(e.count for e in errors) == 30  # every error counted
    assert len([e for e in errors if not e.throttled]) == 3, [e.message for e in errors]
    assert result.stats["odd"]["prepares"] == 2, "the task ran in one worker only"
