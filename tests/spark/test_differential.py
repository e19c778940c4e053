"""Random DAG topologies run on both engines (Spark pipelined and not, several hops per
superstep and one) give the same acked and failed msg ids.

The local engine deals its tasks over as many workers as the Spark run has partitions
(``sparkstorm.spark.partitions``, set alike here) and runs each worker's tasks in the
same hops, so it delivers in Spark's order: even the random bolt that holds a tuple
until its next input, whose outcomes depend on the order across senders, agrees."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from sparkstorm import Config
from sparkstorm.testing import LocalCluster
from tests.property.strategies import build, dag_specs

pytestmark = pytest.mark.spark
PARTITIONS = 2


def outcomes(engine, spec, spark, pipeline=True, hops=None):
    feeder, topology, conf = build(spec, record=False)
    conf[Config.SPARKSTORM_SPARK_PIPELINE] = pipeline
    conf[Config.SPARKSTORM_SPARK_PARTITIONS] = PARTITIONS
    if hops is not None:
        conf[Config.SPARKSTORM_SUPERSTEP_HOPS] = hops
    with LocalCluster(
        engine, spark=spark, mode="superstep" if engine == "spark" else None
    ) as cluster:
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


@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spec=dag_specs(max_bolts=3))
def test_local_and_spark_agree_with_one_hop_per_superstep(spec, spark):
    local = outcomes("local", spec, None, hops=0)
    assert outcomes("spark", spec, spark, hops=0) == local
