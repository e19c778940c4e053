"""A soak: a stateful stream on a cluster of hosts, its workers killed, a host cut off.

    python -m benchmarks.soak --minutes 30 [--rate 40] [--kill-every 120] [--cut-at 600]

A Spark standalone master and one worker on each of two hosts (network namespaces, see
``benchmarks/hosts.py``); the continuous mode runs ``RabbitMQ -> split -> stateful count
(Redis) -> PostgreSQL`` (``tests/state/proof_topology.py``) on them. A publisher feeds
``--rate`` numbered sentences a second for the whole run but its last two minutes; a
continuous worker's Python process (its pid from the REST API) is SIGKILLed every
``--kill-every`` seconds; host a is cut off the network for ``--cut-secs`` at
``--cut-at``. Every 10 s the RSS of the driver (its Python process and its JVM) and of
the hosts (the continuous workers' Python processes, and the executors' and Spark
workers' JVMs) is read from ``/proc``.

The report (``--out``: a text table and a PNG plot) gives the messages in and out, the
restarts, the words counted too often (duplicates) or too rarely (losses) in the
committed state and in the table, and each memory series from minute 5 to the end: its
spread around its value at minute 5 (target: within +-10%) and its growth an hour.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import signal
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from benchmarks.hosts import Hosts, SparkStandalone
from benchmarks.stream_rss import growth_per_hour, sample

ROOT = Path(__file__).resolve().parent.parent
TARGET = str(ROOT / "tests/state/proof_topology.py") + ":topology"
SAMPLE_SECS = 10.0
WARMUP_MINUTES = 5.0
SERIES = ("driver", "driver JVM", "workers", "executor JVMs")


class Publisher(threading.Thread):
    """Publishes ``rate`` numbered sentences a second to ``broker`` until stopped."""

    def __init__(self, broker: Any, rate: float) -> None:
        super().__init__(daemon=True)
        self.broker, self.rate = broker, rate
        self.sent: list[tuple[int, str]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        from tests.state.topology import sentences

        began = time.monotonic()
        while not self.stopped.is_set():
            due = int((time.monotonic() - began) * self.rate) - len(self.sent)
            if due > 0:
                items = sentences(due, start=len(self.sent))
                bodies = [f"{i}|{text}".encode() for i, text in items]
                self.broker.publish(bodies, first=len(self.sent))
                self.sent.extend(items)
            self.stopped.wait(0.5)


def memory(driver: int, spark: SparkStandalone) -> dict[str, float]:
    """MB of RSS: the driver's Python and JVM; the hosts' Python workers and JVMs."""
    mine = sample(driver)
    hosts = {"driver": 0.0, "workers": 0.0, "jvm": 0.0}
    for process in spark.processes.values():
        for kind, mb in sample(process.pid).items():
            hosts[kind] += mb
    return {
        "driver": mine["driver"],
        "driver JVM": mine["jvm"],
        "workers": hosts["workers"],
        "executor JVMs": hosts["jvm"],
    }


def flatness(samples: list[tuple[float, dict[str, float]]]) -> list[str]:
    """Per series: value at minute 5, the spread after it around that value, MB/hour."""
    steady = [(t, s) for t, s in samples if t >= WARMUP_MINUTES * 60]
    if len(steady) < 3:
        return [f"too short a run to read after {WARMUP_MINUTES:g} minutes"]
    lines = [f"{'series':<14} {'minute 5':>9} {'low':>8} {'high':>8} {'MB/hour':>9}  within 10%"]
    for name in SERIES:
        values = [s[name] for _, s in steady]
        base = values[0] or 1.0
        low, high = 100 * (min(values) - base) / base, 100 * (max(values) - base) / base
        slope = growth_per_hour([(t, s[name]) for t, s in steady])
        ok = "yes" if low >= -10 and high <= 10 else "NO"
        lines.append(
            f"{name:<14} {values[0]:>9.0f} {low:>+7.1f}% {high:>+7.1f}% {slope:>+9.0f}  {ok}"
        )
    return lines


def plot(
    samples: list[tuple[float, dict[str, float]]],
    events: list[tuple[float, str]],
    path: Path,
) -> None:
    """RSS of each series over minutes, the kills and the cut marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    minutes = [t / 60 for t, _ in samples]
    for name in SERIES:
        ax.plot(minutes, [s[name] for _, s in samples], label=name)
    for at, what in events:
        ax.axvline(at / 60, color="red" if what == "cut" else "grey", lw=0.6, ls=":")
    ax.axvspan(0, WARMUP_MINUTES, color="0.93")
    ax.set_xlabel("minutes (dotted: a worker SIGKILLed; red: host a cut off; shaded: warm-up)")
    ax.set_ylabel("RSS, MB")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title("benchmarks.soak: RabbitMQ -> stateful count -> PostgreSQL, continuous mode")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def api_url(output: Path, name: str) -> str | None:
    found = re.search(r"UI: (http://\S+?)/? ", output.read_text())
    return None if found is None else f"{found.group(1)}/api/v1/topology/{name}"


def soak(args: argparse.Namespace, folder: Path) -> list[str]:
    from tests.connectors.brokers import BROKERS, with_table
    from tests.run_process import RunProcess
    from tests.state.proof_topology import committed_counts, table_counts
    from tests.state.topology import expected_counts

    hosts = Hosts(["a", "b"])
    try:
        hosts.forward_services(folder / "socat.log")
        spark = SparkStandalone(hosts, folder, {"spark.worker.timeout": "40"}, ["a", "b"])
        spark.wait_for_workers()
        name = f"soak_{uuid.uuid4().hex[:8]}"
        prefix = f"sparkstorm-soak:{uuid.uuid4().hex[:8]}"
        with with_table(BROKERS["rabbitmq"](name), "word text PRIMARY KEY, count bigint") as q:
            env = {
                "PROOF_NAME": name,
                "PROOF_REDIS_PREFIX": prefix,
                "PROOF_PENDING": "100",
                "PROOF_SERVICES_HOST": hosts.gateway,
                "PROOF_RABBITMQ_OPTIONS": "?heartbeat=5",
            }
            conf = {
                "spark.network.timeout": "40s",
                "spark.network.timeoutInterval": "5s",
                "spark.executor.heartbeatInterval": "3s",
                "spark.cores.max": "2",
                "spark.executor.memory": "512m",
                "spark.driver.host": hosts.gateway,
                "spark.driver.bindAddress": hosts.gateway,
                "sparkstorm.spark.partitions": "2",
                "sparkstorm.worker.timeout.secs": "5",
            }
            runner = RunProcess(
                TARGET, "continuous", folder, "--name", name, "-t", "0",
                *(f"--conf={key}={value}" for key, value in conf.items()),
                env=env, master=spark.url,
            )  # fmt: skip
            run, output = runner.process, runner.out
            publisher = Publisher(q, args.rate)
            publisher.start()
            began, samples, events = time.monotonic(), [], []
            last_kill, cut_until, topology = 0.0, None, {}
            rng = random.Random(args.seed)
            end = args.minutes * 60
            try:
                while (now := time.monotonic() - began) < end:
                    if run.poll() is not None:
                        msg = f"the run ended early:\n{output.read_text()[-3000:]}"
                        raise SystemExit(msg)
                    samples.append((now, memory(run.pid, spark)))
                    url = api_url(output, name)
                    with contextlib.suppress(httpx.HTTPError, ValueError):
                        topology = httpx.get(url, timeout=5).json() if url else {}
                    pids = [w["pid"] for w in topology.get("workers", []) if w.get("pid")]
                    if now - last_kill >= args.kill_every and now > 60 and pids:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(rng.choice(pids), signal.SIGKILL)
                            events.append((now, "kill"))
                        last_kill = now
                    if cut_until is None and now >= args.cut_at:
                        hosts.cut("a")
                        events.append((now, "cut"))
                        cut_until = now + args.cut_secs
                    if cut_until is not None and cut_until > 0 and now >= cut_until:
                        hosts.reconnect("a")
                        cut_until = -1.0
                    if now >= end - 120:
                        publisher.stopped.set()
                    time.sleep(SAMPLE_SECS)
                publisher.stopped.set()
                publisher.join()
                exact = expected_counts(publisher.sent)
                deadline = time.monotonic() + 300
                while time.monotonic() < deadline and table_counts(name) != exact:
                    time.sleep(2)
                os.killpg(run.pid, signal.SIGINT)
                run.wait(120)
            finally:
                publisher.stopped.set()
                if run.poll() is None:
                    os.killpg(run.pid, signal.SIGKILL)
            table, state = table_counts(name), committed_counts(env, name)
            left = q.remaining()
    finally:
        hosts.close()
    kills = sum(1 for _, what in events if what == "kill")
    lines = [
        f"benchmarks.soak: {args.minutes:g} minutes, {args.rate:g} sentences/s offered, "
        f"a worker SIGKILLed every {args.kill_every:g} s ({kills} kills), host a cut off "
        f"for {args.cut_secs:g} s at minute {args.cut_at / 60:.1f}",
        f"messages in: {len(publisher.sent):,}; left in the queue at the end: {left:,}; "
        f"restarts: {topology.get('restartCount')}; exit code {run.returncode} "
        "(130: stopped by Ctrl-C)",
    ]
    for where, counts in (("committed state", state), ("table", table)):
        over = sum(max(0, counts.get(w, 0) - n) for w, n in exact.items())
        under = sum(max(0, n - counts.get(w, 0)) for w, n in exact.items())
        lines.append(
            f"{where}: {sum(exact.values()):,} words expected, {over:,} counted too often "
            f"(duplicates), {under:,} too rarely (losses)"
        )
    lines += ["RSS in MB, from minute 5 to the end, around its value at minute 5:"]
    lines += flatness(samples)
    plot(samples, events, args.out.with_suffix(".png"))
    lines += ["samples, MB: " + ", ".join(SERIES)]
    lines += [f"{t / 60:6.1f} min " + " ".join(f"{s[n]:7.0f}" for n in SERIES) for t, s in samples]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--rate", type=float, default=40, help="sentences a second")
    parser.add_argument("--kill-every", type=float, default=120, help="seconds")
    parser.add_argument("--cut-at", type=float, default=600, help="seconds")
    parser.add_argument("--cut-secs", type=float, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "docs/benchmarks/soak.txt")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sparkstorm-soak-") as folder:
        lines = soak(args, Path(folder))
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:14]))


if __name__ == "__main__":
    main()
