"""Configuration as others may see it: every secret masked by what it means.

The API shows a run's resolved configuration to whoever reaches it, so a secret must
be masked wherever a value can hold one, not only under the keys sparkstorm names: a
key named as a secret at any depth (``sasl.password`` in a dict of a dict), a URL's
password, a NATS token URL, a secret query parameter, a libpq DSN's ``password=``,
and all of these inside JSON text (a provider config given as a string).
"""

from __future__ import annotations

import json
import re
from typing import Any

from sparkstorm.urls import SECRET_NAME, redacted

MASK = "***"
DSN_SECRET = re.compile(
    r"\b(\w*(?:password|passwd|secret|token)\w*)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE
)
"""A ``key=value`` field named as a secret, as in a libpq DSN (``password='x y'``)."""


def masked(key: str, value: Any) -> Any:
    """``value``, found under ``key``, with every secret in it replaced by ``***``."""
    if SECRET_NAME.search(key.rpartition(".")[2]) and value not in (None, "", {}, []):
        return MASK if not isinstance(value, dict | list) else _masked_inside(value)
    return _masked_inside(value)


def _masked_inside(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): masked(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked_inside(v) for v in value]
    if isinstance(value, str):
        return _masked_text(value)
    return value if isinstance(value, int | float | bool | type(None)) else repr(value)


def _masked_text(text: str) -> str:
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            pass
        else:
            return json.dumps(_masked_inside(parsed))
    if "://" in text:  # a URL (a DSN in URL form too), or words with URLs among them
        return " ".join(redacted(word) if "://" in word else word for word in text.split(" "))
    return DSN_SECRET.sub(lambda m: f"{m.group(1)}={MASK}", text)
