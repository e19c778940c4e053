"""Random DAG topologies run on both engines (Spark pipelined and not) give the same acked
and failed msg ids."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from sparkstorm import Config
from sparkstorm.testing import LocalCluster
from tests.property.strategies import build, dag_specs

pytestmark = pytest.mark.spark


def outcomes(engine, spec, spark, pipeline=True):
    feeder, topology, conf = build(spec, record=False)
    conf[Config.SPARKSTORM_SPARK_PIPELINE] = pipeline
    with LocalCluster(engine=engine, spark=spark) as cluster:
        cluster.submit_topology("dag", conf, topology)
        for msg_id in range(spec["messages"]):
            feeder.feed([f"m{msg_id}"], msg_id)
        cluster.wait_until_idle()
        cluster.advance_time(25)
        assert cluster.errors("dag") == []
    failed = {m: r.kind for m, r in zip(feeder.failed, feeder.fail_reasons, strict=True)}
    return sorted(feeder.acked), failed


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spec=dag_specs(max_bolts=3))
def test_local_and_spark_agree(spec, spark):
    local = outcomes("local", spec, None)
    assert outcomes("spark", spec, spark) == local
    assert outcomes("spark", spec, spark, pipeline=False) == local
    acked, failed = local
    assert len(acked) + len(failed) == spec["messages"]
