from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REDIS_URL
from tests.connectors.brokers import BROKERS, Broker, with_table


@pytest.fixture(params=["directory", "redis"])
def provider(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """A durable state provider and its config, private to the test."""
    if request.param == "redis":
        return "redis", {"url": REDIS_URL, "key_prefix": request.getfixturevalue("redis_prefix")}
    return "directory", {"path": (tmp_path / "state").as_uri()}  # a URI, as on a cluster


@pytest.fixture
def queue_and_table(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """A RabbitMQ queue (or the source the test names: ``redis``) and a PostgreSQL table
    (word, count) of this test's own."""
    queue = BROKERS[getattr(request, "param", "rabbitmq")](f"proof_{uuid.uuid4().hex[:8]}")
    with with_table(queue, "word text PRIMARY KEY, count bigint NOT NULL") as created:
        yield created
