"""Hosts of a cluster on one machine: network namespaces joined by a bridge.

Each host is a network namespace with an address of its own, joined to a bridge in the
root namespace by a veth pair; the root namespace, at the bridge's address, is the
driver's host. Cutting a host off is taking its link down, as a switch port or a cable
fails: its processes run on and see no network. A Spark standalone master (root
namespace) and a worker per host make the cluster; ``socat`` lets the hosts reach the
loopback services (RabbitMQ, PostgreSQL, Redis) through the bridge's address.

Everything is torn down at :meth:`close`. Setting it up needs root, ``ip`` (iproute2)
and ``socat``; without them :class:`Hosts` raises, saying which is missing. Used by
``tests/cluster`` and ``benchmarks.soak``.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

SERVICE_PORTS = (5672, 5432, 6379)
"""The loopback services the hosts reach through the bridge: RabbitMQ, PostgreSQL, Redis."""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def missing() -> str | None:
    """What this machine lacks to make hosts, in words; None when nothing."""
    if os.geteuid() != 0:
        return "root (network namespaces are made with `ip netns add`)"
    for tool, package in (("ip", "iproute2"), ("socat", "socat")):
        if shutil.which(tool) is None:
            return f"the `{tool}` command (Debian's package {package})"
    return None


class Hosts:
    """Network namespaces ``names``, each a host at its own address on a private subnet."""

    def __init__(self, names: list[str]) -> None:
        lacking = missing()
        if lacking is not None:
            msg = f"a cluster of network namespaces needs {lacking}, which this machine lacks"
            raise RuntimeError(msg)
        self.tag = f"{os.getpid() % 10000:04d}{random.randrange(100):02d}"
        self.subnet = f"10.{random.randrange(100, 250)}.{random.randrange(256)}"
        self.bridge = f"ssb{self.tag}"
        self.gateway = f"{self.subnet}.1"
        """The root namespace's address: the driver's host."""
        self.names = list(names)
        self._processes: list[subprocess.Popen[bytes]] = []
        _ip("link", "add", self.bridge, "type", "bridge")
        try:
            _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for index, name in enumerate(self.names, start=2):
                namespace, link = self.namespace(name), self._link(name)
                _ip("netns", "add", namespace)
                _ip("link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", namespace)
                _ip("link", "set", link, "master", self.bridge, "up")
                _ip("-n", namespace, "addr", "add", f"{self.subnet}.{index}/24", "dev", "eth0")
                _ip("-n", namespace, "link", "set", "eth0", "up")
                _ip("-n", namespace, "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise

    def namespace(self, name: str) -> str:
        """The network namespace of host ``name``."""
        return f"ss{self.tag}-{name}"

    def _link(self, name: str) -> str:
        return f"ssv{self.tag}{self.names.index(name)}"

    def address(self, name: str) -> str:
        """Host ``name``'s address."""
        return f"{self.subnet}.{self.names.index(name) + 2}"

    def start(
        self, name: str | None, argv: list[str], log: Path, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Run ``argv`` on host ``name`` (None: the root namespace), in a process group
        of its own that :meth:`close` kills; its output goes to ``log``."""
        prefix = [] if name is None else ["ip", "netns", "exec", self.namespace(name)]
        with log.open("ab") as out:
            process = subprocess.Popen(
                [*prefix, *argv],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                start_new_session=True,
            )
        self._processes.append(process)
        return process

    def run(self, name: str, argv: list[str]) -> str:
        """Run ``argv`` on host ``name`` to its end; its standard output."""
        command = ["ip", "netns", "exec", self.namespace(name), *argv]
        return subprocess.run(command, check=True, capture_output=True, text=True).stdout

    def forward_services(self, log: Path) -> None:
        """Make the loopback services reachable at the gateway's address, same ports."""
        for port in SERVICE_PORTS:
            listen = f"TCP-LISTEN:{port},bind={self.gateway},fork,reuseaddr"
            self.start(None, ["socat", listen, f"TCP:127.0.0.1:{port}"], log)

    def cut(self, name: str) -> None:
        """Cut host ``name`` off the network (its link goes down)."""
        _ip("link", "set", self._link(name), "down")

    def reconnect(self, name: str) -> None:
        """Put host ``name`` back on the network."""
        _ip("link", "set", self._link(name), "up")

    def close(self) -> None:
        """Kill every process started here, and remove the namespaces and the bridge."""
        for process in self._processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)
        for name in self.names:
            subprocess.run(["ip", "netns", "del", self.namespace(name)], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


class SparkStandalone:
    """A Spark standalone master on the driver's host and a one-core worker on each of
    ``workers`` (host names)."""

    def __init__(
        self, hosts: Hosts, folder: Path, options: dict[str, str], workers: list[str]
    ) -> None:
        import pyspark

        self.hosts = hosts
        self.folder = folder
        home = Path(pyspark.__file__).parent
        spark_class = str(home / "bin" / "spark-class")
        java_options = " ".join(f"-D{key}={value}" for key, value in options.items())
        env = {
            "SPARK_HOME": str(home),
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_MASTER_OPTS": java_options,
            "SPARK_WORKER_OPTS": java_options,
        }
        self.port = _free_port(hosts.gateway)
        self.ui_port = _free_port(hosts.gateway)
        self.url = f"spark://{hosts.gateway}:{self.port}"
        master = "org.apache.spark.deploy.master.Master"
        hosts.start(
            None,
            [
                spark_class,
                master,
                "--host",
                hosts.gateway,
                "--port",
                str(self.port),
                "--webui-port",
                str(self.ui_port),
            ],
            folder / "master.log",
            {**env, "SPARK_LOCAL_IP": hosts.gateway},
        )
        self.workers = workers
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        """Host name -> its Spark worker's process (executors run under it)."""
        for name in workers:
            address = hosts.address(name)
            self.processes[name] = hosts.start(
                name,
                [
                    spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    address,
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--webui-port",
                    "0",
                    self.url,
                ],
                folder / f"worker-{name}.log",
                {**env, "SPARK_LOCAL_IP": address, "SPARK_WORKER_DIR": str(folder / name)},
            )

    def alive_workers(self) -> list[str]:
        """The hosts of the workers the master counts alive (its JSON page)."""
        url = f"http://{self.hosts.gateway}:{self.ui_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as answer:
            state = json.load(answer)
        return [w["host"] for w in state["workers"] if w["state"] == "ALIVE"]

    def wait_for_workers(self, timeout: float = 90) -> None:
        """Wait until every host's worker has registered with the master."""
        deadline = time.monotonic() + timeout
        wanted = sorted(self.hosts.address(n) for n in self.workers)
        seen: list[str] = []
        while time.monotonic() < deadline:
            try:
                seen = sorted(self.alive_workers())
            except OSError:
                seen = []
            if seen == wanted:
                return
            time.sleep(0.5)
        logs = "\n".join(p.read_text()[-1500:] for p in sorted(self.folder.glob("*.log")))
        msg = f"Spark workers alive after {timeout:g} s: {seen}, wanted {wanted}\n{logs}"
        raise RuntimeError(msg)


def _free_port(host: str) -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
