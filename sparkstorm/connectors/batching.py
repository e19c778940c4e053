"""``BatchingSink``: what every batching sink bolt shares.

A sink buffers its inputs and writes them in one transaction when ``batch_size`` are
buffered, on every tick (it asks for one every ``flush_secs``, so a partial batch never
waits longer, and a graceful stop, which keeps ticks coming while trees are pending,
gets it written) and at ``cleanup``. The batch is acked after the write and failed as a
whole if the write raises one of ``write_errors``, which is reported. Subclasses write.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

from sparkstorm.config import TOPOLOGY_TICK_TUPLE_FREQ_SECS
from sparkstorm.reliability.collectors import OutputCollector
from sparkstorm.topology.components import Bolt
from sparkstorm.topology.context import TopologyContext
from sparkstorm.topology.tuple import Tuple


class BatchingSink(Bolt):
    """Buffers inputs, writes them in batches, acks them after the write.

    .. versionadded:: 0.1.0
    """

    write_errors: ClassVar[tuple[type[BaseException], ...]] = ()
    """Exceptions of a failed write: the batch is failed, the error reported."""

    def __init__(self, batch_size: int, flush_secs: float | None) -> None:
        self.batch_size, self.flush_secs = batch_size, flush_secs

    def get_component_configuration(self) -> dict[str, Any] | None:
        """A tick every ``flush_secs``, so a partial batch is written in time."""
        return None if self.flush_secs is None else {TOPOLOGY_TICK_TUPLE_FREQ_SECS: self.flush_secs}

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector
    ) -> None:
        """Keep the collector and the buffer (a restored snapshot may hold one)."""
        self.collector = collector
        self.buffer: list[Tuple] = getattr(self, "buffer", [])

    @abstractmethod
    def write(self, batch: list[Tuple]) -> None:
        """Write ``batch`` in one transaction; raise one of ``write_errors`` if it fails."""

    def failed_write(self, batch: list[Tuple], error: BaseException) -> None:
        """Called after a failed write has been reported and its batch failed."""

    def execute(self, tup: Tuple) -> None:
        """Buffer the tuple; write on a full batch or a tick."""
        if tup.is_tick():
            self.collector.ack(tup)
            self.flush()
            return
        self.buffer.append(tup)
        if len(self.buffer) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        """Write the buffer; ack it after the write, fail it if the write fails."""
        if not self.buffer:
            return
        batch, self.buffer = self.buffer, []
        try:
            self.write(batch)
        except self.write_errors as exc:
            self.collector.report_error(exc)
            for tup in batch:
                self.collector.fail(tup)
            self.failed_write(batch, exc)
            return
        for tup in batch:
            self.collector.ack(tup)

    def cleanup(self) -> None:
        """Write what is buffered."""
        self.flush()
