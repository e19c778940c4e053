"""A benchmark row's engine and mode: ``local``, ``spark`` (supersteps) or ``continuous``."""

from __future__ import annotations

from typing import Any

from sparkstorm import Config


def engine_for(row: str, conf: dict[str, Any]) -> str:
    """The engine to run row ``row`` on; sets the Spark mode in ``conf`` for a Spark row."""
    if row == "local":
        return "local"
    conf[Config.SPARKSTORM_SPARK_MODE] = "continuous" if row == "continuous" else "superstep"
    return "spark"
