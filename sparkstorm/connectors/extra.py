"""The connectors' own packages come with the ``connectors`` extra: a missing one is named."""

from __future__ import annotations

INSTALL = "pip install 'sparkstorm[connectors]' (from a checkout: pip install -e '.[connectors]')"


def missing_extra(error: ModuleNotFoundError, connector: str) -> ModuleNotFoundError:
    """The error to raise when ``connector``'s package is not installed: what to install."""
    msg = f"the {connector} needs the package {error.name!r}, which is not installed: {INSTALL}"
    return ModuleNotFoundError(msg, name=error.name)
