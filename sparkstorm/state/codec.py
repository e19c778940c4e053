"""Keys and values as stored: a pickle signed for its place, or JSON readable in the store."""

from __future__ import annotations

import json
import pickle
from typing import Any

from sparkstorm.state.signing import Place, Signer


class Codec:
    """Signed pickle (any value) or JSON (plain data, readable where it is stored)."""

    def __init__(self, serializer: str, signer: Signer, topology: str) -> None:
        if serializer not in ("pickle", "json"):
            msg = f"state provider config 'serializer' is {serializer!r}; use 'pickle' or 'json'"
            raise ValueError(msg)
        self.json = serializer == "json"
        self.signer = signer
        self.topology = topology

    def dumps(self, value: Any, place: Place) -> bytes:
        """``value`` as stored at ``place``."""
        if self.json:
            return json.dumps(value, sort_keys=True).encode()
        return self.signer.sign(pickle.dumps(value, protocol=5), place)

    def loads(self, data: Any, where: str, place: Place) -> Any:
        """``data`` decoded; a pickle only once its signature for ``place`` matched."""
        if self.json:
            return json.loads(data)
        return pickle.loads(self.signer.verify(data, where, place, self.topology))

    def loads_older(self, data: Any, where: str) -> Any:
        """``data`` as an earlier sparkstorm stored it: a pickle once its old MAC matched."""
        if self.json:
            return json.loads(data)
        return pickle.loads(self.signer.verify_older(data, where))
