"""Classes named in configuration: a class itself, or its ``package.module.Class`` name."""

from __future__ import annotations

import importlib

from sparkstorm.errors import InvalidTopologyError


def load_class(key: str, entry: object) -> type:
    """The class ``entry`` is or names, for configuration key ``key``.

    Raises
    ------
    InvalidTopologyError
        Naming the key and the entry that does not import or is not a class.
    """
    if isinstance(entry, type):
        return entry
    module, _, name = str(entry).replace(":", ".").rpartition(".")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        msg = (
            f"config key {key!r}: cannot load {entry!r} ({exc}); give classes, or their "
            f"'package.module.Class' names importable here"
        )
        raise InvalidTopologyError(msg) from None
    if not isinstance(found, type):
        msg = f"config key {key!r}: {entry!r} is not a class"
        raise InvalidTopologyError(msg)
    return found
