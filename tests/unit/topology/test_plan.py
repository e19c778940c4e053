import pickle

import cloudpickle

from examples.word_count import build, generated_sentences
from sparkstorm.config import resolve
from sparkstorm.topology.plan import Plan


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
