"""Failed batches: replayed under the same txid and counted once; a poison batch stops."""

from __future__ import annotations

import json
import re

import pytest

from sparkstorm import Fields
from sparkstorm.trident import (
    BatchFailedTooOften,
    Count,
    FeederBatchSpout,
    FixedBatchSpout,
    LocalDRPC,
    MemoryMapState,
    TridentTopology,
    TupleCollectionGet,
)
from tests.test_cli import sparkstorm
from tests.trident.ops import FailOnceOn, Poison, Split


# The superstep mode runs the same coordinator and bolts: test_integration.py runs them
# there; its ~6 supersteps a batch would make these replays a minute.
@pytest.fixture(params=["local", "continuous"])
def cluster(request, cluster_factory):
    return cluster_factory(request.param)


def counted(topology: TridentTopology, stream, drpc: LocalDRPC) -> None:
    counts = (
        stream.group_by(Fields("word"))
        .persistent_aggregate(MemoryMapState.Factory(), Count(), Fields("count"))
        .parallelism_hint(2)
    )
    (
        topology.new_drpc_stream("all", drpc)
        .broadcast()
        .state_query(counts, Fields("args"), TupleCollectionGet(), Fields("word", "count"))
        .project(Fields("word", "count"))
    )


def counts_of(drpc: LocalDRPC) -> dict[str, int]:
    return {word: n for word, n in json.loads(drpc.execute("all", ""))}


def test_batches_in_flight_replayed_after_a_failure_count_once(cluster, tmp_path):
    """max.spout.pending 3: batch 2 fails once; it and the batches after it are replayed."""
    sentences = [[f"w{i} common"] for i in range(12)]
    spout = FixedBatchSpout(Fields("sentence"), 2, *sentences)  # 6 batches
    topology, drpc = TridentTopology(), LocalDRPC()
    stream = (
        topology.new_stream("fixed", spout)
        .each(Fields("sentence"), Split(), Fields("token"))
        .each(Fields("token"), FailOnceOn("w3", str(tmp_path / "failed")), Fields("word"))
        .parallelism_hint(2)
    )
    counted(topology, stream, drpc)
    cluster.submit_topology("replays", {"topology.max.spout.pending": 3}, topology.build())
    cluster.wait_until_idle()
    counts = counts_of(drpc)
    assert (tmp_path / "failed").exists()  # the failure happened
    assert counts["common"] == 12
    assert all(counts[f"w{i}"] == 1 for i in range(12))


def test_a_batch_that_always_fails_stops_the_topology_naming_it(cluster):
    feeder = FeederBatchSpout(["sentence"])
    topology, drpc = TridentTopology(), LocalDRPC()
    stream = (
        topology.new_stream("feeder", feeder)
        .each(Fields("sentence"), Split(), Fields("token"))
        .each(Fields("token"), Poison("arsenic"), Fields("word"))
        .name("digest")
    )
    counted(topology, stream, drpc)
    cluster.submit_topology("poison", {"sparkstorm.trident.max.attempts": 3}, topology.build())
    feeder.feed([["bread and butter"]])
    assert counts_of(drpc) == {"bread": 1, "and": 1, "butter": 1}
    with pytest.raises(BatchFailedTooOften) as stopped:
        feeder.feed([["bread and arsenic"]])
    message = str(stopped.value)
    assert re.search(r"Trident batch \d+ failed 3 times", message), message
    assert "digest: ValueError: cannot digest 'arsenic'" in message
    assert counts_of(drpc) == {"bread": 1, "and": 1, "butter": 1}  # nothing of it committed


def test_sparkstorm_run_stops_on_a_batch_that_always_fails_with_exit_1():
    """Even a run asked to go on until stopped (``-t 0``) ends, saying why in one line."""
    target = "tests/trident/poison_topology.py:topology"
    done = sparkstorm("run", target, "--engine", "local", "--quiet", "--no-ui", "-t", "0")
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert re.search(r"BatchFailedTooOften: Trident batch 2 failed 3 times", said), said
    assert "digest: ValueError: cannot digest 'arsenic'" in said
