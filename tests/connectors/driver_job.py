"""A driver process for the SIGKILL test: runs the words topology until the queue is done."""

from __future__ import annotations

import sys
import time

from sparkstorm.connectors.rabbitmq import RabbitMQSpout
from sparkstorm.engines.local import LocalEngine
from sparkstorm.runtime.clock import WallClock
from sparkstorm.runtime.superstep import TopologyRuntime
from tests.connectors.topologies import URL, words_topology


def main(queue: str, table: str, expected_rows: int) -> None:
    from tests.connectors.topologies import row_count

    topology, conf = words_topology(queue, table, spout=RabbitMQSpout(URL, queue))
    runtime = TopologyRuntime("driver", topology, conf, LocalEngine(), WallClock())
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        runtime.step()
        if runtime.idle():
            if row_count(table) >= expected_rows and not runtime.pending_count():
                break
            time.sleep(0.02)
    runtime.kill()
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
