"""Checkpointed state of stateful bolts: ``KeyValueState`` and the stores behind it."""

from sparkstorm.state.key_value import KeyValueState

__all__ = ["KeyValueState"]
