"""The continuous mode on a cluster of hosts: a Spark standalone master, and two workers
on hosts of their own (network namespaces, see ``hosts.py``), the driver on a third.

One stream, ``RabbitMQ -> split -> stateful count (Redis) -> PostgreSQL``
(``tests/state/proof_topology.py``), lives through what a cluster's network does to it,
in phases, each fed its own sentences:

1. both hosts up: the workers bind to their executors' own addresses and talk across
   hosts; a process on a third host knocks on a worker's and the driver's sockets and
   is refused;
2. host a cut off for 12 s: its worker falls silent, is lost after
   ``sparkstorm.worker.timeout.secs``, and the workers start again once it is back;
3. host b cut off for good: Spark drops its executor, and the run goes on over the one
   worker left.

After each phase every message is counted, exactly: in the committed state and in the
table.

Before it, Trident's word count answers DRPC calls put to the driver's REST API: the
coordinator that takes them and the bolt that answers run in executors on hosts a and
b, and reach the driver's DRPC server over CURVE, on the driver's cluster address.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable

import httpx
import pytest

from sparkstorm.cli import EXIT_INTERRUPTED
from tests.cluster.conftest import Cluster
from tests.run_process import ROOT, RunProcess
from tests.state.proof_topology import committed_counts, table_counts
from tests.state.topology import expected_counts, sentences

pytestmark = [pytest.mark.services, pytest.mark.spark]
TARGET = str(ROOT / "tests/state/proof_topology.py") + ":topology"
PHASE = 400
"""Sentences fed per phase."""
CUT_SECS = 12
"""Short of TCP's retransmission at 12.6 s after a cut, so the link is used again at once."""
SPARK = {
    # Spark drops an executor it has not heard from in 20 s (a 12 s cut is survived: its
    # last heartbeat, every 3 s, is at most 15 s old when the link comes back)
    "spark.network.timeout": "20s",
    "spark.network.timeoutInterval": "5s",
    "spark.executor.heartbeatInterval": "3s",
    "spark.cores.max": "2",
    "spark.executor.memory": "512m",
}
TOPOLOGY = {
    "sparkstorm.worker.timeout.secs": "5",
    "sparkstorm.spark.partitions": "2",
    "sparkstorm.restart.delay.max.secs": "2",
}


def test_a_trident_topology_on_other_hosts_answers_drpc_through_the_drivers_api(
    cluster: Cluster, tmp_path
):
    hosts = cluster.hosts
    options = [f"--conf={key}={value}" for key, value in {**SPARK, **TOPOLOGY}.items()]
    options += [
        f"--conf=spark.driver.host={hosts.gateway}",
        f"--conf=spark.driver.bindAddress={hosts.gateway}",
    ]
    name = "trident_word_count"
    run = RunProcess(
        "examples/trident_word_count.py",
        "continuous",
        tmp_path,
        "-t",
        "0",
        *options,
        env={},
        master=cluster.spark.url,
    )
    answers: list[tuple[int, str]] = []

    def api() -> str | None:
        found = re.search(r"UI: (http://\S+?)/? ", run.output())
        return f"{found.group(1)}/api/v1/topology/{name}" if found else None

    def answered_in_full() -> bool:  # every batch committed: 20,000 "the" and 4,000 "man"
        if (url := api()) is None:
            return False
        try:
            response = httpx.post(
                f"{url}/drpc/words?timeout=10",
                content=b"the man",
                headers={"Content-Type": "application/octet-stream"},
                timeout=30,
            )
        except httpx.HTTPError as exc:  # the run is ending: until() says how, with its output
            answers.append((0, repr(exc)))
            return False
        answers.append((response.status_code, response.text))
        return response.status_code == 200 and response.json() == [[24000]]

    try:
        run.until(answered_in_full, "words('the man') answered [[24000]]", 180, answers.__str__)
        # the coordinator that took the requests and the bolt that answered ran there
        workers = httpx.get(str(api()), timeout=5).json()["workers"]
        spaces = {namespace_of(w["pid"]) for w in workers}
        assert spaces == {hosts.namespace("a"), hosts.namespace("b")}, workers
        assert run.stop() == EXIT_INTERRUPTED, run.output()[-3000:]
    finally:
        if run.process.poll() is None:
            run.kill()


def test_a_stream_lives_through_a_cut_off_host_and_a_lost_one_counting_exactly(
    cluster: Cluster, queue_and_table, redis_prefix, tmp_path
):
    hosts = cluster.hosts
    name = queue_and_table.name
    env = {
        "PROOF_NAME": name,
        "PROOF_REDIS_PREFIX": redis_prefix,
        "PROOF_PENDING": "100",
        "PROOF_SERVICES_HOST": hosts.gateway,
        "PROOF_RABBITMQ_OPTIONS": "?heartbeat=5",  # a cut-off consumer's messages come back
    }
    options = [f"--conf={key}={value}" for key, value in {**SPARK, **TOPOLOGY}.items()]
    options += [
        f"--conf=spark.driver.host={hosts.gateway}",
        f"--conf=spark.driver.bindAddress={hosts.gateway}",
    ]
    run = RunProcess(
        TARGET,
        "continuous",
        tmp_path,
        "--name",
        name,
        "-t",
        "0",
        *options,
        env=env,
        master=cluster.spark.url,
    )
    fed: list[tuple[int, str]] = []

    def feed() -> None:
        items = sentences(PHASE, start=len(fed))
        queue_and_table.publish([f"{i}|{text}".encode() for i, text in items], first=len(fed))
        fed.extend(items)

    def counted_exactly() -> bool:
        exact = expected_counts(fed)
        return queue_and_table.remaining() == 0 and table_counts(name) == exact

    def status() -> str:
        exact, table = expected_counts(fed), table_counts(name)
        wrong = {w: (table.get(w), n) for w, n in exact.items() if table.get(w) != n}
        state = committed_counts(env, name)
        wrong_state = {w: (state.get(w), n) for w, n in exact.items() if state.get(w) != n}
        shown = topology()
        logs = "".join(
            f"\n--- {path}\n{path.read_text()[-3000:]}"
            for path in sorted(cluster.folder.glob("*/app-*/*/stderr"))
        )
        return (
            f"{queue_and_table.remaining()} messages left; words counted wrong (table, "
            f"exact): {wrong}; in the committed state: {wrong_state}; workers "
            f"{shown.get('workers')}; restarts {shown.get('restarts')}{logs}"
        )

    api: list[str] = []

    def topology() -> dict:
        if not api:
            found = re.search(r"UI: (http://\S+?)/? ", run.output())
            if found is None:
                return {}
            api.append(f"{found.group(1)}/api/v1/topology/{name}")
        return httpx.get(api[0], timeout=5).json()

    def workers_running(n: int) -> Callable[[], bool]:
        def check() -> bool:
            shown = topology()
            return len(shown.get("workers", [])) == n and all(
                w.get("turns") is not None for w in shown["workers"]
            )

        return check

    try:
        # 1. both hosts up
        feed()
        run.until(counted_exactly, "every sentence of phase 1 counted", 240, status)
        control = [a for a in python_sockets(root_listening(run.process.pid)) if hosts.gateway in a]
        assert control, "the driver's control socket does not listen on its host's address"
        listening = {h: python_sockets(hosts.run(h, ["ss", "-ltnpH"])) for h in ("a", "b")}
        connected = {h: python_sockets(hosts.run(h, ["ss", "-tnpH"])) for h in ("a", "b")}
        for host, other in (("a", "b"), ("b", "a")):
            assert listening[host], f"no worker listens on host {host}"
            # its own address, not every interface (127.0.0.1: PySpark's daemon's)
            own = {a.rsplit(":", 1)[0] for a in listening[host]} - {"127.0.0.1"}
            assert own == {hosts.address(host)}, listening
            assert set(control) <= connected[host], (host, control, connected[host])
            assert listening[other] & connected[host], (host, listening[other], connected)
        for target in (sorted(listening["a"])[0], control[0]):
            said = json.loads(
                hosts.run(
                    "stranger", [sys.executable, "-m", "tests.cluster.stranger", f"tcp://{target}"]
                )
            )
            for how, events in said.items():
                assert "HANDSHAKE_SUCCEEDED" not in events, (target, how, events)
                assert {
                    "HANDSHAKE_FAILED_PROTOCOL",
                    "HANDSHAKE_FAILED_NO_DETAIL",
                    "DISCONNECTED",
                } & set(events), (target, how, events)
        assert topology()["restartCount"] == 0

        # 2. host a cut off for 30 s, then back
        hosts.cut("a")
        feed()
        time.sleep(CUT_SECS)
        hosts.reconnect("a")
        run.until(counted_exactly, "every sentence of phase 2 counted", 240, status)
        run.until(workers_running(2), "two workers again", 120, status)
        shown = topology()
        assert shown["restartCount"] >= 1, shown["restarts"]
        assert "sent nothing for" in shown["restarts"][0]["reason"], shown["restarts"]

        # 3. host b cut off for good
        hosts.cut("b")
        feed()
        run.until(workers_running(1), "the run going on over one worker", 240, status)
        run.until(counted_exactly, "every sentence of phase 3 counted", 240, status)
        assert run.stop() == EXIT_INTERRUPTED, run.output()[-3000:]  # a Ctrl-C's code
    finally:
        if run.process.poll() is None:
            run.kill()
    exact = expected_counts(fed)
    assert committed_counts(env, name) == exact
    assert table_counts(name) == exact


def python_sockets(ss_output: str) -> set[str]:
    """The local (``ss -l``) or peer addresses of Python processes' TCP sockets."""
    found = set()
    for line in ss_output.splitlines():
        fields = line.split()
        if "python" not in line or len(fields) < 5:
            continue
        listening = fields[0] == "LISTEN"
        found.add(fields[3] if listening else fields[4])
    return found


def namespace_of(pid: int) -> str:
    """The network namespace (the host, here) process ``pid`` runs in."""
    import subprocess

    said = subprocess.run(["ip", "netns", "identify", str(pid)], capture_output=True, text=True)
    return said.stdout.strip()


def root_listening(pid: int) -> str:
    """``ss -ltnpH`` in the root namespace, the lines of process ``pid`` only."""
    import subprocess

    out = subprocess.run(["ss", "-ltnpH"], check=True, capture_output=True, text=True).stdout
    return "\n".join(line for line in out.splitlines() if f"pid={pid}," in line)
