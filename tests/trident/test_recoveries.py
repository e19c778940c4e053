"""Trident stays exact through a running topology's recoveries: rebalances and a lost worker.

The example (``examples/trident_word_count.py``) runs as a stream on the continuous mode
with default settings: ``MemoryMapState``, a ``FixedBatchSpout``, and its progress in the
run's memory. Once every batch committed, it is rebalanced to one worker and back to two,
then one of Spark's Python workers is SIGKILLed. The coordinator's progress, the spout's
position and the map's values move together through each: DRPC answers the same counts
after every recovery, and the run's report counts every word once.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time

import httpx

from sparkstorm.control import registry
from tests.run_process import RunProcess, spark_python_workers
from tests.test_cli import sparkstorm
from tests.test_control import run_dir  # noqa: F401 (the run folder fixture)

NAME = "trident_word_count"
ALL = "[[24000]]\n"
"""``the man``: 20,000 "the" and 4,000 "man", every batch committed."""


def test_the_example_stays_exact_through_rebalances_and_a_lost_worker(run_dir, tmp_path):  # noqa: F811
    driver = RunProcess("examples/trident_word_count.py", "continuous", tmp_path, "-t", "0", env={})
    try:
        answers = [_answered(driver)]
        for workers in (1, 2):
            before = _figures()
            moved = sparkstorm("rebalance", NAME, "--workers", str(workers), "--wait", "10")
            assert moved.returncode == 0, moved.stdout + moved.stderr
            answers.append(_answered(driver))
            _never_back(before, _figures())
            _moves_on(before["committedTxid"])
        os.kill(random.choice(spark_python_workers(driver.process.pid)), signal.SIGKILL)
        driver.until(lambda: "a continuous worker was lost" in driver.output(), "the loss")
        answers.append(_answered(driver))
        assert answers == [ALL] * 4, answers
        assert sparkstorm("kill", NAME, "--wait", "5").returncode == 0
        assert driver.wait(60) == 0, driver.output()[-3000:]
    finally:
        if driver.process.poll() is None:
            driver.kill()
    said = driver.output()
    assert said.count("the tasks are placed over") == 2, said[-3000:]
    assert "144,000 words counted in 28 distinct words" in said, said[-3000:]


def _figures() -> dict[str, float]:
    """What an operator reads on the page: the batches' figures, each worker's turns."""
    url = registry.lookup(NAME)["url"]
    deadline = time.monotonic() + 30
    while True:  # the coordinator reports its figures every second, a new worker at once
        topology = httpx.get(f"{url}/api/v1/topology/{NAME}", timeout=10).json()
        trident = topology["trident"]
        if trident and all(w["turns"] is not None for w in topology["workers"]):
            break
        assert time.monotonic() < deadline, topology
        time.sleep(0.5)
    return {
        "txid": trident["txid"],
        "committedTxid": trident["committedTxid"],
        "committedBatches": trident["committedBatches"],
        **{f"worker {w['worker']} turns": w["turns"] for w in topology["workers"]},
    }


def _never_back(before: dict[str, float], after: dict[str, float]) -> None:
    """Issue 55, defect 3: after a rebalance the txid went from 23 to 16, the batches
    with tuples to 0, and the workers' turns to 0 (a worker rebalanced away is gone)."""
    for key in before.keys() & after.keys():
        assert after[key] >= before[key], (key, before, after)


def _moves_on(committed: float, within: float = 15) -> None:
    """Issue 66, defect 3: a restarted coordinator went over the empty batches' txids
    again (kept only for batches with tuples), and the txid stood still for 45 s."""
    deadline = time.monotonic() + within
    while (now := _figures()["committedTxid"]) <= committed:
        assert time.monotonic() < deadline, f"the txid stood at {now} for {within:g} s"
        time.sleep(0.5)


def _answered(driver: RunProcess, timeout: float = 90) -> str:
    """DRPC ``words("the man")`` once every batch committed: its answer then.

    Asked again while a rebalance or restart makes it wait; an answer over what the
    batches hold (a batch counted twice) ends the wait at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        asked = sparkstorm("drpc", NAME, "words", "the man", "--timeout", "10")
        if asked.returncode == 0 and (
            asked.stdout == ALL or json.loads(asked.stdout)[0][0] > 24000
        ):
            return asked.stdout
        assert driver.process.poll() is None, driver.output()[-3000:]
        assert time.monotonic() < deadline, (asked.stdout, asked.stderr)
        time.sleep(0.5)
