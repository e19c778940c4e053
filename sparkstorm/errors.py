"""Exceptions of the public API; Storm's names are kept for the ones Storm has."""

from __future__ import annotations


class SparkStormError(Exception):
    """Base class of every error sparkstorm raises on its own account."""


class InvalidTopologyError(SparkStormError):
    """A topology, a declaration or an emit breaks the topology's contract.

    Raised by :meth:`TopologyBuilder.create_topology` for structural mistakes and by the
    collectors for emits that do not match what a component declared. The attributes name
    what is at fault so that tests and the CLI can use them.

    .. versionadded:: 0.1.0
    """

    def __init__(
        self,
        message: str,
        *,
        component: str | None = None,
        stream: str | None = None,
        field: str | None = None,
        site: tuple[str, int] | None = None,
    ) -> None:
        super().__init__(message)
        self.component = component
        self.stream = stream
        self.field = field
        self.site = site
        """Where the user declared what is at fault (file, line), when known."""


class ComponentStateError(SparkStormError):
    """A bolt's or spout's attributes cannot be copied between tasks or supersteps.

    .. versionadded:: 0.1.0
    """


class IdleTimeoutError(SparkStormError, TimeoutError):
    """``wait_until_idle`` ran out of time while tuples were still in flight.

    .. versionadded:: 0.1.0
    """


class RunAborted(SparkStormError):
    """A second Ctrl-C or SIGTERM cut a graceful stop short.

    ``pending`` tracked messages were left without an outcome: their spouts' ``ack`` or
    ``fail`` was never called (a broker that tracks deliveries, as RabbitMQ does,
    delivers them again).

    .. versionadded:: 0.1.0
    """

    def __init__(self, pending: int) -> None:
        super().__init__(
            f"aborted by a second interrupt: {pending:,} tracked messages were left without "
            f"an outcome (a source that tracks deliveries, such as RabbitMQ, delivers them again)"
        )
        self.pending = pending


class FailedException(SparkStormError):
    """Raised from :meth:`BasicBolt.execute` to fail the current input tuple.

    .. versionadded:: 0.1.0
    """


class ReportedFailedException(FailedException):
    """Like :class:`FailedException`, and also reports the error (as ``report_error``).

    .. versionadded:: 0.1.0
    """


class StateStoreError(SparkStormError):
    """The state provider's store cannot be reached or refused sparkstorm.

    .. versionadded:: 0.1.0
    """


class TopologyHalted(SparkStormError):
    """Reported by a component that cannot go on: ``sparkstorm.run`` stops on it.

    The stop is graceful (what is in flight completes), and the run ends with the error
    (``sparkstorm run``: exit 1). Trident's ``BatchFailedTooOften`` is one. A
    ``LocalCluster`` keeps the topology, as a test may still ask it questions.

    .. versionadded:: 0.3.0
    """


class BatchFailedTooOften(TopologyHalted):
    """A Trident batch failed ``sparkstorm.trident.max.attempts`` times: the topology stops.

    .. versionadded:: 0.3.0
    """


class DRPCExecutionError(SparkStormError):
    """A DRPC request failed in the topology (Storm's ``DRPCExecutionException``).

    .. versionadded:: 0.3.0
    """
