"""Storm's rebalance on the continuous mode, mid-stream: the tasks placed over one worker,
then over two again, through the REST API, with nothing lost and the counts exact.

``RabbitMQ -> split -> stateful count (Redis) -> PostgreSQL`` (``proof_topology.py``):
each rebalance drains what is in flight, fails back what is still pending (RabbitMQ
redelivers it) and starts the workers again over the new number, from the last commit.
"""

from __future__ import annotations

import httpx
import pytest

from sparkstorm import run
from tests.state import proof_topology
from tests.state.proof_topology import committed_counts, table_counts
from tests.state.topology import expected_counts, sentences

pytestmark = [pytest.mark.services, pytest.mark.spark]


def test_a_rebalance_to_one_worker_and_back_loses_nothing_and_counts_exactly(
    spark, queue_and_table, redis_prefix, monkeypatch
):
    name = queue_and_table.name
    items = sentences(3000)
    queue_and_table.publish([f"{i}|{text}".encode() for i, text in items])
    env = {"PROOF_NAME": name, "PROOF_REDIS_PREFIX": redis_prefix, "PROOF_PENDING": "100"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    topology, conf = proof_topology.topology()
    conf["sparkstorm.spark.mode"] = "continuous"
    workers_seen: list[int] = []
    answers: list[httpx.Response] = []
    left_when_asked: list[int] = []
    statuses: list[str] = []
    split_on: set[int] = set()
    count_on: set[int] = set()

    def operate(runtime) -> None:  # an operator, between the driver loop's steps
        workers_seen.append(runtime.engine.workers)
        url = f"{runtime.api_url}/api/v1/topology/{name}/rebalance/5"
        left = queue_and_table.remaining()
        if not answers and left < len(items) - 300:
            too_many = httpx.post(url, json={"rebalanceOptions": {"numWorkers": 3}})
            assert too_many.status_code == 400, too_many.text
            assert "the cluster has 2 task slots, so ask for 1 to 2" in too_many.json()["error"]
            answers.append(httpx.post(url, json={"rebalanceOptions": {"numWorkers": 1}}))
            left_when_asked.append(left)
        elif len(answers) == 1 and runtime.engine.workers == 1:
            bad = {"numWorkers": 2, "executors": {"split": 3}}  # split has 2 tasks
            refused = httpx.post(url, json={"rebalanceOptions": bad})
            assert refused.status_code == 400, refused.text
            assert "split=3: its executors are the workers its 2 tasks" in refused.text
            # back over 2 workers, Storm's -e: split's two tasks kept in one of them
            options = {"numWorkers": 2, "executors": {"split": 1}}
            answers.append(httpx.post(url, json={"rebalanceOptions": options}))
            left_when_asked.append(left)
            summary = httpx.get(f"{runtime.api_url}/api/v1/topology/{name}").json()
            statuses.append(summary["status"])  # what sparkstorm list shows, at once
        elif len(answers) == 2 and runtime.engine.workers == 2 and not split_on:
            plan = runtime.plan
            split_on.update(plan.worker_of[t] for t in plan.component_tasks("split"))
            count_on.update(plan.worker_of[t] for t in plan.component_tasks("count"))

    result = run(
        topology,
        conf,
        "spark",
        spark,
        name=name,
        api=True,
        on_progress=operate,
        progress_secs=0.3,
    )
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    changes = [w for i, w in enumerate(workers_seen) if i == 0 or w != workers_seen[i - 1]]
    assert changes == [2, 1, 2], workers_seen
    assert all(left > 0 for left in left_when_asked), left_when_asked  # both mid-stream
    assert statuses == ["REBALANCING"]
    assert len(split_on) == 1 and len(count_on) == 2, (split_on, count_on)
    assert queue_and_table.remaining() == 0
    exact = expected_counts(items)
    assert committed_counts(env, name) == exact
    assert table_counts(name) == exact
    assert not [e for e in result.errors if not e.recovered], result.errors
