"""A word count with a stateful count, failures on first attempts, and a replaying spout.

Every sentence's words must be counted exactly once in the committed state, whatever
fails: ``split`` fails the first attempt of some sentences, ``count`` raises after
changing its state on the first attempt of others, so a rollback is what keeps the
counts exact.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa

from sparkstorm import BasicBolt, Bolt, Count, Fields, Spout, StatefulWindowedBolt, TopologyBuilder
from sparkstorm.arrow import StatefulArrowBolt, StatefulWindowedArrowBolt
from sparkstorm.state import KeyValueState
from sparkstorm.topology.components import StatefulBolt

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]


def sentences(n: int, start: int = 0) -> list[tuple[int, str]]:
    """``n`` numbered sentences of 1 to 5 words."""
    return [
        (i, " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(1 + i % 5)))
        for i in range(start, start + n)
    ]


def expected_counts(items: list[tuple[int, str]]) -> dict[str, int]:
    return dict(Counter(word for _, text in items for word in text.split()))


class ReplayingSpout(Spout):
    """Emits numbered sentences once each; replays any that fail, with the attempt number."""

    def __init__(self, items: list[tuple[int, str]]) -> None:
        self.items = items

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.queue = list(reversed(self.items))
        self.attempts: dict[int, int] = {}
        self.acked: set[int] = set()
        self.reasons: Counter[str] = Counter()

    def next_tuple(self) -> None:
        if self.queue:
            number, text = self.queue.pop()
            attempt = self.attempts.get(number, 0)
            self.collector.emit([number, text, attempt], msg_id=(number, text))

    def ack(self, msg_id: Any) -> None:
        self.acked.add(msg_id[0])

    def message_key(self, msg_id: Any) -> int:
        return int(msg_id[0])  # the sentence's number names it in any run

    def fail(self, msg_id: Any, reason: Any = None) -> None:
        self.reasons[getattr(reason, "kind", "?")] += 1
        self.attempts[msg_id[0]] = self.attempts.get(msg_id[0], 0) + 1
        self.queue.append(msg_id)  # replayed next

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("number", "sentence", "attempt"))


class Split(BasicBolt):
    """Splits a sentence; fails the first attempt of every 7th (unless not ``failing``)."""

    def __init__(self, failing: bool = True) -> None:
        self.failing = failing

    def execute(self, tup: Any, collector: Any) -> None:
        from sparkstorm import FailedException

        number, text, attempt = tup.values
        if self.failing and number % 7 == 3 and attempt == 0:
            msg = "first attempts of every 7th sentence fail"
            raise FailedException(msg)
        for word in text.split():
            collector.emit([word, number, attempt])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "number", "attempt"))


class StatefulCount(StatefulBolt):
    """Counts words in its KeyValueState; raises after counting on some first attempts
    (unless not ``failing``)."""

    def __init__(self, failing: bool = True) -> None:
        self.failing = failing

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute(self, tup: Any) -> None:
        word, number, attempt = tup.values
        self.counts.put(word, self.counts.get(word, 0) + 1)
        if self.failing and number % 11 == 5 and attempt == 0:
            msg = "raised after counting: the rollback must undo the count"
            raise RuntimeError(msg)
        self.collector.emit([word, self.counts.get(word)], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


def count_words(state: KeyValueState, words: Any) -> dict[str, int]:
    """Add a column of words to their counts in ``state``: one read and one write for
    the batch. Returns each word's new count."""
    import pyarrow.compute as pc

    tally = pc.value_counts(words)
    distinct, seen = tally.field("values"), tally.field("counts").to_pylist()
    counts = [n + k for n, k in zip(state.get_many(distinct, 0), seen, strict=True)]
    state.put_many(distinct, counts)
    return dict(zip(distinct.to_pylist(), counts, strict=True))


class StatefulArrowCount(StatefulArrowBolt):
    """:class:`StatefulCount` in columns: a batch's words read and written in one call
    each; fails, after counting, the rows of some first attempts (unless not ``failing``)."""

    def __init__(self, failing: bool = True) -> None:
        self.failing = failing

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute_batch(self, batch: Any) -> None:
        import pyarrow as pa

        now = count_words(self.counts, batch["word"])
        out = pa.record_batch(
            [batch["word"], pa.array([now[w] for w in batch["word"].to_pylist()])],
            names=["word", "count"],
        )
        numbers, attempts = batch["number"].to_numpy(), batch["attempt"].to_numpy()
        failing = (numbers % 11 == 5) & (attempts == 0)
        self.collector.emit_batch(out, anchors=pa.array(range(batch.num_rows)))
        if self.failing and failing.any():
            self.collector.fail_rows(failing, "failed after counting: the rollback undoes it")
            self.collector.ack_rows(~failing)
        else:
            self.collector.ack_batch(batch)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


class Sink(Bolt):
    """Acks what it gets, holding each input until the next superstep's first tuple."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def build(items: list[tuple[int, str]], count_tasks: int = 2, arrow: bool = False) -> Any:
    """The word count; ``arrow``: its count a :class:`StatefulArrowCount`."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", ReplayingSpout(items))
    builder.set_bolt("split", Split(), 2).shuffle_grouping("sentences")
    count = StatefulArrowCount() if arrow else StatefulCount()
    builder.set_bolt("count", count, count_tasks).fields_grouping("split", Fields("word"))
    builder.set_bolt("sink", Sink()).shuffle_grouping("count")
    return builder.create_topology()


class CrashingCount(StatefulBolt):
    """Counts words in its KeyValueState; its Python worker dies once, told to commit.

    The first time a task of it gets ``commit`` for checkpoint ``crash_at`` or later,
    it creates ``flag`` and exits its process, so the superstep carrying the commit is
    lost: the marker is written, the trees it completes are not yet acked. Spark only.
    """

    def __init__(self, flag: str, crash_at: int = 2) -> None:
        self.flag, self.crash_at = flag, crash_at

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute(self, tup: Any) -> None:
        word = tup.values[0]
        self.counts.put(word, self.counts.get(word, 0) + 1)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass

    def pre_commit(self, txid: int) -> None:
        import os

        if txid >= self.crash_at and not os.path.exists(self.flag):
            with open(self.flag, "w") as f:
                f.write(str(txid))
            os._exit(1)  # the worker dies mid-superstep, as with a lost executor


class CrashingArrowCount(StatefulArrowBolt):
    """:class:`CrashingCount` in columns: counts a batch's words, its worker dies once at
    ``commit`` of checkpoint ``crash_at`` or later."""

    pre_commit = CrashingCount.pre_commit

    def __init__(self, flag: str, crash_at: int = 2) -> None:
        self.flag, self.crash_at = flag, crash_at

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute_batch(self, batch: Any) -> None:
        count_words(self.counts, batch["word"])
        self.collector.ack_batch(batch)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def build_crashing(
    items: list[tuple[int, str]], flag: str, arrow: bool = False, crash_at: int = 2
) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("sentences", ReplayingSpout(items))
    builder.set_bolt("split", Split(failing=False), 2).shuffle_grouping("sentences")
    count = CrashingArrowCount(flag, crash_at) if arrow else CrashingCount(flag, crash_at)
    builder.set_bolt("count", count, 2).fields_grouping("split", Fields("word"))
    return builder.create_topology()


class WindowTally(StatefulWindowedBolt):
    """Counts, in its state, each sentence number its windows held, and the windows."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, window: Any) -> None:
        for tup in window:
            number = tup.values[0]
            self.state.put(number, self.state.get(number, 0) + 1)
        self.state.put("windows", self.state.get("windows", 0) + 1)
        self.collector.emit([len(window)])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("size"))


class ArrowWindowTally(StatefulWindowedArrowBolt):
    """:class:`WindowTally` over columns: the window's numbers read and written at once."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, window: Any) -> None:
        tally = Counter(window.get().column(0).to_pylist())
        numbers = list(tally)
        seen = self.state.get_many(numbers, 0)
        self.state.put_many(numbers, [n + tally[k] for n, k in zip(seen, numbers, strict=True)])
        self.state.put("windows", self.state.get("windows", 0) + 1)
        self.collector.emit_batch(pa.record_batch([pa.array([len(window)])], names=["size"]))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("size"))


def build_windowed(items: list[tuple[int, str]], window: int = 7, arrow: bool = False) -> Any:
    """The word count of :func:`build`, and beside it a stateful tumbling count window
    (``arrow``: over columns)."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", ReplayingSpout(items))
    builder.set_bolt("split", Split(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", StatefulCount(), 2).fields_grouping("split", Fields("word"))
    tally = (ArrowWindowTally() if arrow else WindowTally()).with_tumbling_window(Count(window))
    builder.set_bolt("tally", tally).shuffle_grouping("sentences")
    return builder.create_topology()


class HoldFirstAttempt(Bolt):
    """Holds the first attempt of sentence 0 unacked until its ``release``-th tick."""

    def __init__(self, release: int) -> None:
        self.release = release

    def get_component_configuration(self) -> dict[str, Any]:
        return {"topology.tick.tuple.freq.secs": 0.5}

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector, self.ticks, self.held = collector, 0, None

    def execute(self, tup: Any) -> None:
        if tup.is_tick():
            self.ticks += 1
            if self.held is not None and self.ticks >= self.release:
                self.collector.ack(self.held)
                self.held = None
        elif tup.values[0] == 0 and tup.values[2] == 0:
            self.held = tup
        else:
            self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def build_holding(items: list[tuple[int, str]], release: int) -> Any:
    """:func:`build`, and beside it a bolt that holds one tree unready for a while."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", ReplayingSpout(items))
    builder.set_bolt("split", Split(failing=False), 2).shuffle_grouping("sentences")
    count = StatefulCount(failing=False)
    builder.set_bolt("count", count, 2).fields_grouping("split", Fields("word"))
    builder.set_bolt("hold", HoldFirstAttempt(release)).shuffle_grouping("sentences")
    return builder.create_topology()
