from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.hosts import Hosts, SparkStandalone
from tests.state.conftest import queue_and_table  # noqa: F401 (the tests' queue and table)

HOST_NAMES = ["a", "b", "stranger"]
"""Two hosts with a Spark worker each, and one with no part in the run."""
WORKER_HOSTS = ["a", "b"]
SPARK_DAEMON_OPTIONS = {"spark.worker.timeout": "30"}
"""The master drops a worker it has not heard from in 30 s (default 60)."""


class Cluster:
    """Hosts in network namespaces, a Spark standalone cluster over them, the services."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.hosts = Hosts(HOST_NAMES)
        try:
            self.hosts.forward_services(folder / "socat.log")
            self.spark = SparkStandalone(self.hosts, folder, SPARK_DAEMON_OPTIONS, WORKER_HOSTS)
            self.spark.wait_for_workers()
        except BaseException:
            self.hosts.close()
            raise

    def close(self) -> None:
        self.hosts.close()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A Spark standalone master (root namespace) and a worker on each of hosts a and b."""
    with tempfile.TemporaryDirectory(prefix="sparkstorm-cluster-") as folder:
        made = Cluster(Path(folder))
        try:
            yield made
        finally:
            made.close()
