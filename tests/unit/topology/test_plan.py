import pickle

import cloudpickle

from examples.word_count import build, generated_sentences
from sparkstorm import Fields, TopologyBuilder
from sparkstorm.config import resolve
from sparkstorm.testing import FeederSpout
from sparkstorm.topology.plan import Plan
from tests.scenarios.bolts import Identity


def test_the_executors_plan_leaves_the_spouts_data_on_the_driver():
    topology, conf = build(generated_sentences(20_000))
    plan = Plan(topology, resolve(conf))
    shipped = plan.for_executors()
    assert shipped.task_component == plan.task_component
    assert shipped.acker_tasks == plan.acker_tasks and shipped.bolt_tasks == plan.bolt_tasks
    assert shipped.routes("split").keys() == plan.routes("split").keys()
    assert shipped.components["split"].obj is plan.components["split"].obj
    assert not hasattr(shipped.components["sentences"].obj, "sentences")
    # the 20,000 sentences no longer travel to every Python worker
    assert len(cloudpickle.dumps(shipped)) < len(cloudpickle.dumps(plan)) / 20
    assert pickle.loads(cloudpickle.dumps(shipped)).num_tasks == plan.num_tasks


def local_or_shuffle_plan(workers: int, hops: int = 16) -> Plan:
    from sparkstorm import Config, Fields, TopologyBuilder
    from sparkstorm.testing import FeederSpout
    from tests.scenarios.bolts import Ack, Identity

    builder = TopologyBuilder()
    builder.set_spout("in", FeederSpout(Fields("num")))
    builder.set_bolt("a", Identity(), 2).shuffle_grouping("in")
    builder.set_bolt("b", Ack(), 4).local_or_shuffle_grouping("a")
    plan = Plan(builder.create_topology(), resolve({Config.SPARKSTORM_SUPERSTEP_HOPS: hops}))
    plan.deal(workers)
    return plan


def targets_of(plan: Plan, task: int) -> set[int]:
    route = plan.routes("a", task)["default"]
    return {t for counter in range(20) for t in route.targets([1], counter)}


def test_the_executors_plan_keeps_the_tasks_dealt_to_each_worker():
    plan = local_or_shuffle_plan(3)
    shipped = plan.for_executors()
    assert shipped.workers == 3 and shipped.worker_of == plan.worker_of
    assert sorted(set(plan.worker_of.values())) == [0, 1, 2]


def test_local_or_shuffle_prefers_the_senders_worker_and_falls_back_to_all():
    plan = local_or_shuffle_plan(2)
    b = plan.component_tasks("b")
    for task in plan.component_tasks("a"):
        same = {t for t in b if plan.worker_of[t] == plan.worker_of[task]}
        assert same and targets_of(plan, task) == same
    plan = local_or_shuffle_plan(1)  # the local engine: one worker, every task local
    assert all(targets_of(plan, task) == set(b) for task in plan.component_tasks("a"))
    plan.worker_of = {t: 0 if t in b else 1 for t in plan.worker_of}  # none beside the sender
    assert targets_of(plan, plan.component_tasks("a")[0]) == set(b)
    plan = local_or_shuffle_plan(2, hops=0)  # no hops: a co-located task saves nothing
    assert all(targets_of(plan, task) == set(b) for task in plan.component_tasks("a"))


def test_topology_tasks_and_max_task_parallelism_set_task_counts_as_in_storm():
    import pytest

    from sparkstorm import Config, InvalidTopologyError, TopologyBuilder
    from sparkstorm.testing import FeederSpout
    from tests.scenarios.bolts import Ack, Identity

    class SixOfMe(Ack):
        def get_component_configuration(self):
            return {Config.TOPOLOGY_TASKS: 6}

    builder = TopologyBuilder()
    builder.set_spout("in", FeederSpout(Fields("num")))
    builder.set_bolt("own", SixOfMe(), 3).shuffle_grouping("in")  # the component's conf
    builder.set_bolt("set", Identity(), 2).set_num_tasks(5).shuffle_grouping("in")
    builder.set_bolt("conf", Ack(), 1).add_configuration("topology.tasks", 4).shuffle_grouping(
        "set"
    )
    builder.set_bolt("hint", Ack(), 3).shuffle_grouping("set")
    topology = builder.create_topology()
    counts = {c: len(Plan(topology, resolve({})).component_tasks(c)) for c in topology.components}
    assert counts == {"in": 1, "own": 6, "set": 5, "conf": 4, "hint": 3}

    capped = Plan(topology, resolve({Config.TOPOLOGY_MAX_TASK_PARALLELISM: 2}))
    assert {c: len(capped.component_tasks(c)) for c in topology.components} == {
        "in": 1,
        "own": 2,
        "set": 2,
        "conf": 2,
        "hint": 2,
    }
    conf = Config()
    conf.set_max_task_parallelism(1)
    assert conf == {"topology.max.task.parallelism": 1}

    bad = TopologyBuilder()
    bad.set_spout("in", FeederSpout(Fields("num")))
    bad.set_bolt("b", Ack()).add_configuration("topology.tasks", 0).shuffle_grouping("in")
    with pytest.raises(InvalidTopologyError, match=r"component 'b': topology.tasks"):
        bad.create_topology()


class _RefusesEmptyCopies(Identity):
    """A bolt whose own ``__getstate__`` needs what ``__init__`` set."""

    def __getstate__(self) -> dict[str, object]:
        return {"fields": self.fields}


def test_a_continuous_worker_gets_whole_only_the_components_it_runs():
    from examples.arrow_word_count import topology
    from sparkstorm.engines.continuous.driver import place
    from sparkstorm.topology.columnar import is_columnar

    arrow_topology, conf = topology(generated_sentences(20_000))
    plan = Plan(arrow_topology, resolve(conf))
    place(plan, 2)
    spout_worker = plan.worker_of[plan.component_tasks("sentences")[0]]
    other = plan.for_worker(1 - spout_worker)
    own = plan.for_worker(spout_worker)
    assert own.components["sentences"].obj is plan.components["sentences"].obj
    assert not hasattr(other.components["sentences"].obj, "text")  # the data stays home
    assert is_columnar(other.components["sentences"].obj)  # its kind travels
    assert other.topology.components is other.components
    assert len(cloudpickle.dumps(other)) < len(cloudpickle.dumps(plan)) / 20
    assert pickle.loads(cloudpickle.dumps(other)).worker_of == plan.worker_of


def test_a_component_whose_empty_copy_cannot_pickle_travels_whole():
    from sparkstorm.engines.continuous.driver import place

    builder = TopologyBuilder()
    builder.set_spout("in", FeederSpout(Fields("num")))
    builder.set_bolt("a", _RefusesEmptyCopies(), 1).shuffle_grouping("in")
    builder.set_bolt("b", Identity(), 1).shuffle_grouping("a")
    plan = Plan(builder.create_topology(), resolve({}))
    place(plan, 2)
    not_running = 1 - plan.worker_of[plan.component_tasks("a")[0]]
    assert plan.for_worker(not_running).components["a"].obj is plan.components["a"].obj
