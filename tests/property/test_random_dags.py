"""Property: on random DAG topologies with random ack/fail/forget behaviour, every msg id
ends acked or failed exactly once, and acked exactly when every tuple of its DAG was acked."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings

from sparkstorm.testing import LocalCluster
from tests.property import dag_bolts
from tests.property.strategies import build, dag_specs


@settings(max_examples=60, deadline=None)
@given(dag_specs())
def test_every_msg_id_gets_exactly_the_outcome_its_dag_deserves(spec):
    dag_bolts.EVENTS.clear()
    feeder, topology, conf = build(spec)
    msg_ids = list(range(spec["messages"]))
    with LocalCluster(engine="local") as cluster:
        cluster.submit_topology("dag", conf, topology)
        for msg_id in msg_ids:
            feeder.feed([f"m{msg_id}"], msg_id)
        cluster.wait_until_idle()
        cluster.advance_time(25)  # every incomplete tree times out within 2T
        expected = dag_bolts.oracle(dag_bolts.EVENTS, msg_ids)
        outcomes = Counter(feeder.acked) + Counter(feeder.failed)
        assert all(outcomes[m] == 1 for m in msg_ids), outcomes
        assert set(outcomes) == set(msg_ids)
        got = {m: "acked" for m in feeder.acked}
        got.update({m: r.kind for m, r in zip(feeder.failed, feeder.fail_reasons, strict=True)})
        assert got == expected
        assert cluster.errors("dag") == []
