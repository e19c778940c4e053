"""The Kafka client's own log, through the project's logging: said once, then at debug.

librdkafka logs every failed connection attempt at error level, several a second while
a broker is down: a closed port flooded a run's output with hundreds of lines before
the connector's own one clear line. Each client's first warning or error is logged as a
warning on ``sparkstorm.kafka.client`` (the problem is said once); everything after it,
and everything below warning, at debug (``--conf`` a log level of DEBUG shows it all).
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("sparkstorm.kafka.client")


class ClientLog:
    """What confluent-kafka calls with each log line of one client (its ``logger``)."""

    def __init__(self) -> None:
        self.said = False

    def log(self, level: int, message: str, *args: Any) -> None:
        """One line of the client's: the first warning said, the rest at debug."""
        if level >= logging.WARNING and not self.said:
            self.said = True
            log.warning(
                "%s (the client's next lines: debug level)", message % args if args else message
            )
            return
        log.debug(message, *args)


def with_client_log(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` of a Kafka client, its log through :class:`ClientLog` unless given one."""
    return {"logger": ClientLog(), **settings}
