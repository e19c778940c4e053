from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REDIS_URL


@pytest.fixture(params=["directory", "redis"])
def provider(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """A durable state provider and its config, private to the test."""
    if request.param == "redis":
        return "redis", {"url": REDIS_URL, "key_prefix": request.getfixturevalue("redis_prefix")}
    return "directory", {"path": (tmp_path / "state").as_uri()}  # a URI, as on a cluster
