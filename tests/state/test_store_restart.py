"""Redis restarted under a running stateful topology: waited for, and the counts stay exact.

A Redis server of the test's own (append-only file, fsync always, so a restart keeps
every write it acknowledged) is stopped mid-run for two seconds and started again.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from sparkstorm import run
from sparkstorm.state import read_committed_state
from sparkstorm.state.stores import open_store
from tests.state.test_exactly_once import conf_for
from tests.state.topology import build, expected_counts, sentences


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """``redis-server`` on ``port``, keeping its data in ``folder`` across restarts."""

    def __init__(self, port: int, folder: Path) -> None:
        self.port, self.folder = port, folder
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not installed; install Debian's redis-server")
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.folder),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        assert self.process is not None
        self.process.terminate()  # a clean shutdown: the append-only file is complete
        self.process.wait(10)


def test_redis_restarted_mid_run_is_waited_for_and_every_sentence_counts_once(tmp_path):
    server = RedisServer(free_port(), tmp_path)
    server.start()
    try:
        items, name = sentences(3000), f"restart-{uuid.uuid4().hex[:8]}"
        provider = ("redis", {"url": f"redis://127.0.0.1:{server.port}/0"})
        conf = conf_for(provider)
        outcome: dict[str, Any] = {}

        def running() -> None:
            try:
                outcome["result"] = run(build(items), conf, engine="local", name=name)
            except BaseException as exc:
                outcome["error"] = exc

        thread = threading.Thread(target=running)
        thread.start()
        client = redis.Redis(port=server.port)
        deadline = time.monotonic() + 30
        while not client.get(f"sparkstorm:state:{name}:committed"):  # a checkpoint in
            assert time.monotonic() < deadline and thread.is_alive(), outcome
            time.sleep(0.02)
        stopped_at = open_store(*provider, name).committed_txid()
        server.stop()
        assert thread.is_alive(), "the run ended before the outage: give it more sentences"
        time.sleep(2.0)  # calls wait meanwhile, backing off
        assert thread.is_alive()
        server.start()
        thread.join(120)
        assert not thread.is_alive(), "the run did not end"
        assert "error" not in outcome, outcome.get("error")
        result = outcome["result"]
        assert result.stats["sentences"]["acked"] == len(items)
        lost = [e.message for e in result.errors if "onnection" in e.message]
        assert not lost, lost  # waited for, not failed (then rolled back and replayed)
        state = read_committed_state(name, conf)
        assert state.of("count") == expected_counts(items)
        assert state.txid > stopped_at  # checkpoints went on after the restart
    finally:
        server.stop()
