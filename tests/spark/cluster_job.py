"""Topology runs on ``local-cluster[2,1,1024]`` (two executor JVMs), optionally killing one.

Run as a script by tests/spark/test_cluster.py (one SparkContext per process); prints one
JSON line with what happened in each run. The stateful run follows the plain one on the
same cluster (Spark has replaced the killed executor by then): a cluster costs ~20 s to
start.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

from benchmarks.rss import process_tree
from sparkstorm import Config, TopologyBuilder
from sparkstorm.control.clock import WallClock
from sparkstorm.control.superstep import TopologyRuntime
from sparkstorm.engines.spark import SparkEngine, create_session
from sparkstorm.state.stores import open_store
from tests.scenarios.bolts import Ack
from tests.spark.cluster_bolts import REGISTRY, CountIds, DiesOnce, ReplayingSpout, SlowIdentity


def executor_pids() -> list[int]:
    """This job's executor JVMs: its own descendants only, never another run's."""
    out = subprocess.run(
        ["pgrep", "-f", "CoarseGrainedExecutorBackend"], capture_output=True, text=True, check=False
    )
    mine = process_tree(os.getpid())
    return [pid for pid in map(int, out.stdout.split()) if pid in mine]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--kill-after", type=int, default=0, help="kill an executor after N acks")
    parser.add_argument("--deadline", type=float, default=150)
    parser.add_argument("--timeout", type=int, default=4, help="message timeout, seconds")
    parser.add_argument(
        "--state-prefix",
        help="then run again with a sink counting ids in Redis state (this prefix), "
        "on the same cluster, killing another executor",
    )
    parser.add_argument("--state-timeout", type=int, default=8, help="its message timeout")
    parser.add_argument(
        "--retry-marker",
        help="first a run whose sink kills its Python worker once (this marker file): "
        "Spark runs the task again within the superstep's job",
    )
    args = parser.parse_args()
    spark = create_session("local-cluster[2,1,1024]", {"spark.task.maxFailures": "4"}, ui=False)
    spark.sparkContext.setLogLevel("ERROR")
    results = {}
    if args.retry_marker is not None:
        retried = argparse.Namespace(**{**vars(args), "kill_after": 0, "messages": 40})
        results["retried"] = run(spark, retried, None, args.timeout, DiesOnce(args.retry_marker))
    results["plain"] = run(spark, args, None, args.timeout)
    if args.state_prefix is not None:
        results["stateful"] = run(spark, args, args.state_prefix, args.state_timeout)
    print(json.dumps(results))
    spark.stop()
    sys.stdout.flush()


def run(spark, args: argparse.Namespace, state_prefix: str | None, timeout: int, sink=None) -> dict:
    """One topology run to the end, killing an executor after ``--kill-after`` acks."""
    REGISTRY.update(acked=set(), failed=0, reasons={})
    builder = TopologyBuilder()
    builder.set_spout("source", ReplayingSpout(args.messages))
    builder.set_bolt("work", SlowIdentity(), 2).shuffle_grouping("source")
    stateful = state_prefix is not None
    sink = sink or (CountIds() if stateful else Ack())
    builder.set_bolt("sink", sink, 2).shuffle_grouping("work")
    conf = Config()
    state_config = {"url": "redis://127.0.0.1:6379/0", "key_prefix": state_prefix}
    if stateful:
        conf["topology.state.provider"] = "redis"
        conf["topology.state.provider.config"] = state_config
        conf["topology.state.checkpoint.interval.ms"] = 500
    conf.set_message_timeout_secs(timeout)
    conf.set_max_spout_pending(40)
    conf[Config.SPARKSTORM_SPOUT_BATCH] = 40
    engine = SparkEngine(spark=spark)
    runtime = TopologyRuntime("cluster", builder.create_topology(), conf, engine, WallClock())
    killed = None
    started = time.monotonic()
    while time.monotonic() - started < args.deadline:
        runtime.step()
        acked = REGISTRY["acked"]
        if args.kill_after and killed is None and len(acked) >= args.kill_after:
            pids = executor_pids()
            killed = pids[0] if pids else -1
            if pids:
                os.kill(pids[0], signal.SIGKILL)
        if len(acked) == args.messages and runtime.idle():
            break
        if runtime.idle():
            time.sleep(0.05)
    runtime.kill()
    counts: dict[int, int] = {}
    if stateful:
        store = open_store("redis", state_config, "cluster")
        for task in runtime.plan.component_tasks("sink"):
            counts.update(store.load(f"sink:{task}")[1])
    return {
        "acked": sorted(REGISTRY["acked"]),
        "failed": REGISTRY["failed"],
        "reasons": REGISTRY["reasons"],
        "killed": killed,
        "executor_pids_at_end": executor_pids(),
        "driver_pid": os.getpid(),
        "worker_pids": sorted(engine.worker_pids),
        "lost_supersteps": [e.message for e in runtime.errors if e.component == "__system"],
        "seconds": round(time.monotonic() - started, 1),
        "committed_counts": {str(k): v for k, v in sorted(counts.items())},
    }


if __name__ == "__main__":
    main()
