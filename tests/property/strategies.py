"""Hypothesis strategies for random DAG topologies."""

from __future__ import annotations

from hypothesis import strategies as st

from sparkstorm import Config, Fields, TopologyBuilder
from sparkstorm.testing import FeederSpout
from tests.property.dag_bolts import RandomBolt

GROUPINGS = ["shuffle", "fields", "all", "global", "local_or_shuffle"]


@st.composite
def dag_specs(draw, max_bolts: int = 4):
    n_bolts = draw(st.integers(1, max_bolts))
    bolts = []
    for i in range(n_bolts):
        sources = ["s"] + [f"b{j}" for j in range(i)]
        subs = draw(st.lists(st.sampled_from(sources), min_size=1, max_size=2, unique=True))
        groupings = [draw(st.sampled_from(GROUPINGS)) for _ in subs]
        bolts.append((f"b{i}", draw(st.integers(1, 3)), list(zip(subs, groupings, strict=True))))
    return {
        "bolts": bolts,
        "ackers": draw(st.integers(1, 3)),
        "seed": draw(st.integers(0, 2**32)),
        "messages": draw(st.integers(1, 12)),
    }


def build(spec, record: bool = True):
    feeder = FeederSpout(Fields("label"))
    builder = TopologyBuilder()
    builder.set_spout("s", feeder, 2)
    for name, parallelism, subs in spec["bolts"]:
        declarer = builder.set_bolt(name, RandomBolt(record), parallelism)
        for source, grouping in subs:
            if grouping == "fields":
                declarer.fields_grouping(source, Fields("label"))
            else:
                getattr(declarer, f"{grouping}_grouping")(source)
    conf = Config()
    conf.set_num_ackers(spec["ackers"])
    conf.set_message_timeout_secs(10)
    conf[Config.SPARKSTORM_SEED] = spec["seed"]
    return feeder, builder.create_topology(), conf
