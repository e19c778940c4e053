"""cloudpickle that keeps file names: tracebacks from a copied component name its file.

cloudpickle pickles a function by value when its module cannot be imported by name
where it is loaded (a script ``sparkstorm run`` loaded, ``__main__``, a test file, or a
module shipped to Spark's workers by value), and writes ``<dynamic-code>`` for its code's
file name. Every task's copy of a component is made by pickling, so a traceback from
user code would name no file, on the driver as in a Spark worker. This pickler keeps the
file name (it only labels the code): a traceback names the user's file and line, and
shows the line itself wherever that file exists (on one machine, always).
"""

from __future__ import annotations

import io
import types
from collections import ChainMap
from typing import Any, ClassVar

import cloudpickle

_DYNAMIC = "<dynamic-code>"
_cloudpickle_code_reduce = getattr(cloudpickle.cloudpickle, "_code_reduce", None)


def _code_reduce(code: types.CodeType) -> Any:
    constructor, args = _cloudpickle_code_reduce(code)  # type: ignore[misc]
    return constructor, tuple(code.co_filename if arg == _DYNAMIC else arg for arg in args)


class _Pickler(cloudpickle.Pickler):  # type: ignore[misc]
    # cloudpickle's own table with one reducer replaced: no deeper lookup per object
    dispatch_table: ClassVar[ChainMap[Any, Any]] = ChainMap(
        {**cloudpickle.Pickler.dispatch_table.maps[0], types.CodeType: _code_reduce},
        *cloudpickle.Pickler.dispatch_table.maps[1:],
    )


def dumps(obj: Any, protocol: int = 5) -> bytes:
    """``obj`` pickled by cloudpickle, code objects keeping their file names."""
    if _cloudpickle_code_reduce is None:  # a cloudpickle without it: names are lost
        data: bytes = cloudpickle.dumps(obj, protocol=protocol)
        return data
    with io.BytesIO() as file:
        _Pickler(file, protocol=protocol).dump(obj)
        return file.getvalue()
