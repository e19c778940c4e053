"""What a checkpoint of a stateful bolt task costs, against its state's size.

    python -m benchmarks.state [--sizes 1000,100000,1000000] [--changed 1000] [--save]

One task's ``KeyValueState`` is filled with N keys and committed; then each of 20
checkpoints changes ``--changed`` keys and is staged, marked and folded in (what a
checkpoint does for one task, without the engine's drain). Reported per provider:
seconds per checkpoint (median), and, for comparison, the bytes a plain bolt's attribute
dict of the same size costs to pickle on every superstep it runs (what the Spark engine
does for state kept in attributes). Redis is the real server on 127.0.0.1:6379.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import tempfile
import time
import uuid

import redis

from benchmarks.report import report
from sparkstorm.state.key_value import KeyValueState
from sparkstorm.state.stores import open_store

CHECKPOINTS = 20


def checkpoint_secs(provider: str, config: dict, size: int, changed: int) -> tuple[float, float]:
    """(median seconds per checkpoint of ``changed`` keys, seconds to load the state)."""
    topology = f"bench-{uuid.uuid4().hex[:8]}"
    store = open_store(provider, config, topology)
    state = KeyValueState(provider, config, topology, "count:1")
    for key in range(size):
        state.put(f"word{key}", key)
    state.prepare(0)
    store.mark_committed(0)
    state.commit(0)
    times = []
    for txid in range(1, CHECKPOINTS + 1):
        for key in range(changed):
            name = f"word{(txid * 7919 + key * 104729) % size}"
            state.put(name, state.get(name, 0) + 1)
        started = time.perf_counter()
        state.prepare(txid)
        store.mark_committed(txid)
        state.commit(txid)
        times.append(time.perf_counter() - started)
    started = time.perf_counter()
    loaded = KeyValueState(provider, config, topology, "count:1")
    load = time.perf_counter() - started
    assert len(loaded) == size
    return statistics.median(times), load


def measure(sizes: list[int], changed: int) -> list[str]:
    """The table of checkpoint costs for each provider and state size."""
    prefix = f"sparkstorm-bench:{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    lines = [
        f"Checkpoint cost of one stateful task, {changed:,} keys changed per checkpoint "
        f"(median of {CHECKPOINTS})",
        "",
        "| keys in state | provider | ms per checkpoint | load ms | attributes pickled per "
        "superstep instead |",
        "|---|---|---|---|---|",
    ]
    try:
        with tempfile.TemporaryDirectory() as directory:
            providers = {
                "redis": {"url": "redis://127.0.0.1:6379/0", "key_prefix": prefix},
                "directory": {"path": directory},
            }
            for size in sizes:
                plain = len(pickle.dumps({f"word{k}": k for k in range(size)}, protocol=5))
                for provider, config in providers.items():
                    secs, load = checkpoint_secs(provider, config, size, changed)
                    lines.append(
                        f"| {size:,} | {provider} | {secs * 1000:.1f} | {load * 1000:.0f} | "
                        f"{plain / 1e6:.2f} MB |"
                    )
    finally:
        keys = list(client.scan_iter(f"{prefix}:*"))
        if keys:
            client.delete(*keys)
        client.close()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--changed", type=int, default=1000)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    report("state", measure(sizes, args.changed), args.save)


if __name__ == "__main__":
    main()
