from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.connectors.kafka_broker import kafka  # noqa: F401 (the session's Kafka broker)

ROOT = Path(__file__).resolve().parent.parent
# Spark's Python workers import test bolts by module name: let them find the repo.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
# Runs under test register where they cannot meet the user's own running topologies,
# nor (the suite runs in two processes, pytest-xdist's workers) the other worker's.
# Processes a worker starts (Spark's workers import test modules) keep its folder.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if (
    os.environ.get("SPARKSTORM_TEST_RUN_DIR_OF") != _WORKER
    or "SPARKSTORM_RUN_DIR" not in os.environ
):
    os.environ["SPARKSTORM_RUN_DIR"] = tempfile.mkdtemp(prefix="sparkstorm-running-")
    os.environ["SPARKSTORM_TEST_RUN_DIR_OF"] = _WORKER
    atexit.register(shutil.rmtree, os.environ["SPARKSTORM_RUN_DIR"], True)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--superstep-all",
        action="store_true",
        help="run every ported Trident integration test on the superstep mode too",
    )


@pytest.fixture(autouse=True)
def _no_run_outlives_its_test() -> Iterator[None]:
    from tests.run_process import kill_leftovers

    yield
    kill_leftovers()


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from sparkstorm.engines.spark import create_session

    session = create_session("local[2]", ui=False)
    warm_up(session)
    yield session
    session.stop()


def warm_up(session) -> None:
    """Run one Python job first: Spark's first Python job is slow and sets globals."""

    def identity(batches):
        yield from batches

    session.range(4).mapInArrow(identity, "id long").collect()


@pytest.fixture(params=["local", "spark"])
def engine(request: pytest.FixtureRequest) -> str:
    if request.param in ("spark", "continuous"):
        request.getfixturevalue("spark")  # the JVM starts only when a spark test runs
    return request.param


@pytest.fixture
def cluster_factory(request: pytest.FixtureRequest):
    """LocalCluster on the test's engine, sharing the session's SparkSession."""
    from sparkstorm.testing import LocalCluster

    def make(engine: str, simulated_time: bool = True) -> LocalCluster:
        spark = request.getfixturevalue("spark") if engine in ("spark", "continuous") else None
        if engine == "local":
            cluster = LocalCluster(engine="local", simulated_time=simulated_time)
        else:  # "spark": the Spark engine's superstep mode; "continuous": its continuous mode
            mode = "continuous" if engine == "continuous" else "superstep"
            cluster = LocalCluster("spark", simulated_time, spark=spark, mode=mode)
        request.addfinalizer(cluster.shutdown)
        return cluster

    return make


def run_on(engine: str, topology, conf=None, spark=None, **options):
    """``sparkstorm.run`` on a test's engine: local, spark (supersteps) or continuous."""
    from sparkstorm import run

    conf = dict(conf or {})
    if engine != "local":  # the Spark engine's two modes
        conf["sparkstorm.spark.mode"] = "continuous" if engine == "continuous" else "superstep"
        engine = "spark"
    return run(topology, conf, engine, spark, **options)


REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix of this test's own in the real Redis; its keys are deleted after."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        pytest.fail(f"Redis is not reachable at 127.0.0.1:6379 ({exc}); start redis-server")
    prefix = f"sparkstorm-test:{uuid.uuid4().hex[:8]}"
    yield prefix
    keys = list(client.scan_iter(f"{prefix}:*"))
    if keys:
        client.delete(*keys)
    client.close()
