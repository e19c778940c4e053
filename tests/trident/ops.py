"""Storm's Trident testing operations (``org.apache.storm.trident.testing``), in Python."""

from __future__ import annotations

from sparkstorm.trident import BaseAggregator, BaseFilter, BaseFunction
from sparkstorm.trident.state.base import StateFactory


class Split(BaseFunction):
    def execute(self, tup, collector):
        for word in tup[0].split():
            collector.emit([word])


class StringLength(BaseFunction):
    def execute(self, tup, collector):
        collector.emit([len(tup[0])])


class TrueFilter(BaseFilter):
    def is_keep(self, tup):
        return True


class AddBang(BaseFunction):
    def execute(self, tup, collector):
        collector.emit([tup[0] + "!"])


class CountAsAggregator(BaseAggregator):
    def init(self, batch_id, collector):
        return {"count": 0}

    def aggregate(self, state, tup, collector):
        state["count"] += 1

    def complete(self, state, collector):
        collector.emit([state["count"]])


class FailOnceOn(BaseFunction):
    """Fails the batch the first time it meets ``word`` (a marker file, seen by every process)."""

    def __init__(self, word: str, marker: str) -> None:
        self.word = word
        self.marker = marker

    def execute(self, tup, collector):
        import os

        from sparkstorm import FailedException

        if tup[0] == self.word and not os.path.exists(self.marker):
            with open(self.marker, "w"):
                pass
            msg = f"first sight of {self.word!r}"
            raise FailedException(msg)
        collector.emit([tup[0]])


class Poison(BaseFunction):
    """Fails every batch that holds ``word``."""

    def __init__(self, word: str) -> None:
        self.word = word

    def execute(self, tup, collector):
        if tup[0] == self.word:
            msg = f"cannot digest {self.word!r}"
            raise ValueError(msg)
        collector.emit([tup[0]])


class FlakyWrites:
    """A backing map whose every ``every``-th multi_put writes, then raises (a lost reply)."""

    def __init__(self, delegate, every: int) -> None:
        self.delegate = delegate
        self.every = every
        self.calls = 0

    def multi_get(self, keys):
        return self.delegate.multi_get(keys)

    def multi_put(self, keys, values):
        self.calls += 1
        self.delegate.multi_put(keys, values)
        if self.calls % self.every == 0:
            msg = f"injected: multi_put #{self.calls} was written, its reply lost"
            raise ConnectionError(msg)


class FlakyMap(StateFactory):
    """A map state factory's state, its writes failing after the fact every ``every`` calls."""

    def __init__(self, factory, every: int = 5) -> None:
        self.factory, self.every = factory, every

    def make_state(self, conf, metrics, partition_index, num_partitions):
        from sparkstorm.trident.state.redis import build_map

        backing = FlakyWrites(self.factory.backing(), self.every)
        return build_map(self.factory.kind, backing, ["$flaky-global"])

    def state_type(self):
        return self.factory.state_type()

    def store(self):
        return self.factory.store()


class SplitData(BaseFunction):
    """The words of a stream entry's ``sentence`` field."""

    def execute(self, tup, collector):
        for word in tup[0]["sentence"].split():
            collector.emit([word])
