"""The scenarios run on every engine and mode: local, Spark supersteps, Spark continuous."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["local", "spark", "continuous"])
def engine(request: pytest.FixtureRequest) -> str:
    if request.param in ("spark", "continuous"):
        request.getfixturevalue("spark")  # the JVM starts only when a Spark test runs
    return request.param
