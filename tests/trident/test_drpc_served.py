"""DRPC served by a run: ``POST /api/v1/topology/NAME/drpc/FUNCTION`` and ``sparkstorm drpc``.

A Trident stream ``new_drpc_stream(function)`` given no ``LocalDRPC`` is served by the
run's own DRPC server, as a Storm topology uses its cluster's DRPC servers.
"""

from __future__ import annotations

import json
import time

import pytest

from sparkstorm import Config, FailedException, Fields
from sparkstorm.trident import (
    BaseFunction,
    Count,
    FilterNull,
    FixedBatchSpout,
    MapGet,
    MemoryMapState,
    Sum,
    TridentTopology,
)
from tests.run_process import RunProcess
from tests.test_cli import sparkstorm
from tests.test_control import Running, run_dir  # noqa: F401 (the run folder fixture)
from tests.trident.ops import Split

SENTENCES = ["the cow jumped over the moon", "the man went to the store", "four score"]
COPIES = 40
"""Each sentence this many times, in batches of 10: 12 batches."""


class FailOnBoom(BaseFunction):
    """Fails the request's batch when its arguments are ``boom``."""

    def execute(self, tup, collector):
        if tup[0] == "boom":
            msg = "boom was asked for"
            raise FailedException(msg)
        collector.emit([tup[0]])


def word_count_served():
    spout = FixedBatchSpout(Fields("sentence"), 10, *([s] for s in SENTENCES * COPIES))
    topology = TridentTopology()
    counts = (
        topology.new_stream("sentences", spout)
        .each(Fields("sentence"), Split(), Fields("word"))
        .group_by(Fields("word"))
        .persistent_aggregate(MemoryMapState.Factory(), Count(), Fields("count"))
        .parallelism_hint(2)
    )
    (
        topology.new_drpc_stream("words")  # no LocalDRPC: the run serves it
        .each(Fields("args"), FailOnBoom(), Fields("checked"))
        .each(Fields("args"), Split(), Fields("word"))
        .group_by(Fields("word"))
        .state_query(counts, Fields("word"), MapGet(), Fields("count"))
        .each(Fields("count"), FilterNull())
        .aggregate(Fields("count"), Sum(), Fields("sum"))
    )
    conf = Config()
    conf[Config.TOPOLOGY_TRIDENT_BATCH_EMIT_INTERVAL_MILLIS] = 50
    return topology.build(), conf


ARGS = {"Content-Type": "application/octet-stream"}
"""A DRPC call's arguments, as they are (the API takes no body a web form could send)."""


def expected_sum(args: str) -> int:
    words = [w for s in SENTENCES for w in s.split()]
    return sum(words.count(w) for w in args.split()) * COPIES


# The local engine; LocalDRPC from Spark's workers is in test_integration.py on the
# continuous mode (the same mailbox; only the server's address comes from the conf).
# Checked by hand on the continuous mode too; left out for the suite's 20 minutes.
@pytest.mark.parametrize("engine", ["local"])
def test_a_runs_drpc_function_is_served_by_its_api_and_the_command_line(engine, request):
    spark = request.getfixturevalue("spark") if engine != "local" else None
    live = Running(engine, spark, f"drpc-{engine}", make=word_count_served)
    path = f"/api/v1/topology/{live.name}/drpc"

    def words(args: str) -> list[list[int]]:
        response = live.http.post(f"{path}/words", content=args.encode(), headers=ARGS)
        assert response.status_code == 200, response.text
        return response.json()

    want = expected_sum("the man")  # 4 + 1 per copy
    deadline = time.monotonic() + 60
    while (answer := words("the man")) != [[want]]:  # counts grow until every batch committed
        assert answer[0][0] < want, answer  # never more than the batches hold
        assert time.monotonic() < deadline, f"the counts stayed at {answer}, not [[{want}]]"
        time.sleep(0.2)
    assert words("four score cow") == [[expected_sum("four score cow")]]

    def batches():  # the coordinator's figures, as the page and the live table show them
        return live.get(f"/{live.name}")["trident"] or {}  # None before its first second

    live.until(lambda: batches().get("drpcRequests", 0) >= 2, "the DRPC requests counted")
    shown = batches()
    assert shown["committedTxid"] >= 12 and shown["committedBatches"] == 12  # 120 / 10
    assert shown["batchTuples"] == 10 and shown["replays"] == 0 and shown["halted"] is None
    assert live.get("/summary")["topologies"][0]["trident"]["committedTxid"] >= 12
    coordinator = live.get(f"/{live.name}/component/trident-coordinator")
    assert coordinator["metrics"]["trident"]["committedBatches"] == 12
    assert words("nosuchword") == [[0]]  # a combiner over no tuples gives its zero, as Storm

    cli = sparkstorm("drpc", live.name, "words", "moon store")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == [[expected_sum("moon store")]]

    failed = live.http.post(f"{path}/words", content=b"boom", headers=ARGS)
    assert failed.status_code == 500
    assert "DRPC words('boom') failed" in failed.json()["error"]
    assert "boom was asked for" in failed.json()["error"]
    unknown = live.http.post(f"{path}/nosuch", content=b"x", headers=ARGS)
    assert unknown.status_code == 404
    assert "no DRPC function 'nosuch'" in unknown.json()["error"]
    assert "it serves: words" in unknown.json()["error"]
    bad_timeout = live.http.post(f"{path}/words?timeout=-1", content=b"x", headers=ARGS)
    assert bad_timeout.status_code == 400 and "seconds > 0" in bad_timeout.json()["error"]
    cli_unknown = sparkstorm("drpc", live.name, "nosuch", "x")
    assert cli_unknown.returncode == 2 and "HTTP 404" in cli_unknown.stderr

    assert live.http.post(f"/api/v1/topology/{live.name}/kill/5").status_code == 200
    live.thread.join(60)
    assert not live.thread.is_alive() and live.error is None, live.error


def test_the_example_answers_sparkstorm_drpc_while_it_runs_until_stopped(run_dir, tmp_path):  # noqa: F811
    """``-t 0`` runs until stopped, even a module that sets ``UNTIL_IDLE``."""
    driver = RunProcess("examples/trident_word_count.py", "local", tmp_path, "-t", "0", env={})
    try:
        deadline = time.monotonic() + 60
        while (asked := sparkstorm("drpc", "trident_word_count", "words", "the man")).stdout != (
            "[[24000]]\n"  # every batch committed: 20,000 "the" and 4,000 "man"
        ):
            assert driver.process.poll() is None, (
                "the run ended by itself: -t 0 was not until stopped"
            )
            assert time.monotonic() < deadline, asked
            time.sleep(0.5)
        assert sparkstorm("kill", "trident_word_count", "--wait", "5").returncode == 0
        assert driver.wait(60) == 0, driver.output()
    finally:
        if driver.process.poll() is None:
            driver.kill()
    assert "144,000 words counted in 28 distinct words" in driver.output()
