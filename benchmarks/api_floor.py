"""The floor of a tuple-at-a-time Python API: word count's own bolts with no engine at all.

The example's ``SplitSentence`` and ``WordCount`` run in one process, on one core, with
a collector that only appends what is emitted: no ``Tuple`` objects (a list stands in,
as ``tup[0]`` is all the bolts read), no ids, routing, acking, serialization or Spark.
What is left is the user's code and one Python call per ``execute``, ``emit`` and
``ack``: what any engine keeping Storm's bolt API in CPython pays per tuple, before it
does anything of its own. ``benchmarks/wordcount.py`` sets the issue's targets against it.
"""

from __future__ import annotations

import time
from typing import Any

from examples.word_count import SplitSentence, WordCount


class Appending:
    """A collector that keeps what is emitted and nothing else; a reported error raises."""

    def __init__(self) -> None:
        self.out: list[list[Any]] = []

    def emit(self, values: list[Any], anchors: Any = None, stream: str = "default") -> None:
        self.out.append(values)

    def ack(self, tup: Any) -> None:
        pass

    fail = ack

    def report_error(self, error: BaseException) -> None:
        raise error


def api_floor(sentences: list[str]) -> dict[str, float]:
    """Tuples/s of the word count's bolt code alone (sentences split plus words counted)."""
    split, count = SplitSentence(), WordCount()
    words, counted = Appending(), Appending()
    split.prepare({}, None, words)
    count.prepare({}, None)
    started = time.perf_counter()
    for sentence in sentences:
        split.execute([sentence])
    for word in words.out:
        count.execute(word, counted)
    elapsed = time.perf_counter() - started
    assert len(counted.out) == len(words.out), "every word is counted"
    return {"tps": (len(sentences) + len(words.out)) / elapsed}
