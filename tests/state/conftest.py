from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

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


@pytest.fixture(params=["directory", "redis"])
def provider(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """A durable state provider and its config, private to the test."""
    if request.param == "redis":
        return "redis", {"url": REDIS_URL, "key_prefix": request.getfixturevalue("redis_prefix")}
    return "directory", {"path": str(tmp_path / "state")}
