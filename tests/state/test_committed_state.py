"""Reading a topology's committed state outside any run: the Python API and the CLI verb."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from sparkstorm import run
from sparkstorm.errors import StateStoreError
from sparkstorm.state import read_committed_state
from sparkstorm.state.stores import open_store
from tests.state.test_exactly_once import (
    committed_counts,
    conf_for,
    crash_as_a_checkpoint_commits,
)
from tests.state.topology import build, expected_counts, sentences
from tests.test_cli import sparkstorm


def store_files(provider, name) -> dict[str, bytes]:
    """Everything the store holds for topology ``name`` (to see that reading wrote nothing)."""
    kind, config = provider
    store = open_store(kind, config, name)
    if kind == "redis":
        client = store.client
        return {
            key.decode(): repr(client.dump(key)).encode()
            for key in client.scan_iter(match=f"{store.prefix}:*")
        }
    root = Path(store.root.removeprefix("file://"))
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_the_committed_state_of_a_finished_run(provider):
    items, name = sentences(120), f"read-{uuid.uuid4().hex[:8]}"
    conf = conf_for(provider)
    run(build(items), conf, engine="local", name=name)

    state = read_committed_state(name, conf)

    assert state.txid >= 0 and state.provider == provider[0]
    assert state.components == ["count"]
    assert {t.task for t in state.tasks} == {2, 3}  # count's two tasks
    assert state.of("count") == expected_counts(items)
    assert sorted((k, v) for _, _, k, v in state.items()) == sorted(expected_counts(items).items())


def test_reading_rolls_a_staged_commit_forward_as_a_restart_would_and_writes_nothing(provider):
    """The driver died after writing the marker, before the tasks folded their changes in."""
    items, name, conf = sentences(300), f"staged-{uuid.uuid4().hex[:8]}", conf_for(provider)
    crash_as_a_checkpoint_commits(name, items, conf)
    store = open_store(*provider, name)
    marker = store.committed_txid()
    before = store_files(provider, name)

    state = read_committed_state(name, conf)

    assert store_files(provider, name) == before  # read only
    assert state.txid == marker
    assert all(t.txid == marker for t in state.tasks)
    if provider[0] == "redis":  # its hashes alone are behind what the marker committed
        data = {(t.component, t.task): t.data for t in state.tasks}
        behind = [
            task
            for task in store.tasks()
            if (folded := store._committed(task))[0] < marker
            and folded[1] != data[task.split(":")[0], int(task.split(":")[1])]
        ]
        assert behind, "the crash left no staged commit to roll forward"
    # what a restart loads (and writes) is what the reader said
    assert committed_counts(*provider, name) == state.of("count")


def test_a_name_with_no_checkpoint_reads_as_none_and_leaves_nothing_behind(provider, tmp_path):
    name = f"never-{uuid.uuid4().hex[:8]}"
    state = read_committed_state(name, conf_for(provider))
    assert (state.txid, state.tasks) == (-1, [])
    assert store_files(provider, name) == {}
    with pytest.raises(KeyError, match="no state for component 'count'"):
        state.of("count")


def test_the_memory_provider_and_an_unreachable_store_are_one_clear_error():
    with pytest.raises(StateStoreError, match="'memory' state provider keeps nothing"):
        read_committed_state("any", {})
    conf = {
        "topology.state.provider": "redis",
        "topology.state.provider.config": {"url": "redis://:secret@127.0.0.1:1/0"},
    }
    with pytest.raises(StateStoreError) as raised:
        read_committed_state("any", conf)
    message = str(raised.value)
    assert "state provider 'redis' at redis://:***@127.0.0.1:1/0 cannot be used" in message
    assert "secret" not in message and "\n" not in message


def test_the_state_verb_prints_and_streams_json(redis_prefix):
    items, name = sentences(60), f"verb-{uuid.uuid4().hex[:8]}"
    provider = ("redis", {"url": "redis://127.0.0.1:6379/0", "key_prefix": redis_prefix})
    conf = conf_for(provider)
    run(build(items), conf, engine="local", name=name)
    given = [
        "--conf",
        "topology.state.provider=redis",
        "--conf",
        f"topology.state.provider.config={json.dumps(provider[1])}",
    ]

    shown = sparkstorm("state", name, *given, "--limit", "3")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"{name}: checkpoint ") and "redis provider" in lines[0]
    words = expected_counts(items)
    assert f"count: {len(words):,} keys in 2 task(s)" in lines
    assert f"  'alpha': {words['alpha']}" in lines
    assert any(line.startswith(f"  ... {len(words) - 3:,} more") for line in lines)

    streamed = sparkstorm("state", name, *given, "--json")
    rows = [json.loads(line) for line in streamed.stdout.splitlines()]
    assert {r["key"]: r["value"] for r in rows} == words
    assert {r["component"] for r in rows} == {"count"}

    refused = sparkstorm("state", name)  # the default provider keeps nothing
    assert refused.returncode == 1
    assert (
        refused.stderr.startswith("sparkstorm: error: topology ") and "--conf" not in refused.stdout
    )


def test_spark_reads_the_committed_state_as_a_dataframe(spark, redis_prefix):
    from sparkstorm.engines.spark import committed_state_frame

    items, name = sentences(90), f"frame-{uuid.uuid4().hex[:8]}"
    provider = ("redis", {"url": "redis://127.0.0.1:6379/0", "key_prefix": redis_prefix})
    conf = conf_for(provider)
    run(build(items), conf, engine="local", name=name)
    words = expected_counts(items)

    frame = committed_state_frame(spark, name, conf)  # key and value as JSON text
    rows = frame.collect()
    assert frame.columns == ["component", "task", "txid", "key", "value"]
    assert {r.key: json.loads(r.value) for r in rows} == words
    assert {(r.component, r.task) for r in rows} <= {("count", 2), ("count", 3)}
    assert {r.txid for r in rows} == {read_committed_state(name, conf).txid}

    typed = committed_state_frame(
        spark, name, conf, schema="component string, task int, txid long, key string, value long"
    )
    assert typed.groupBy("component").sum("value").collect()[0][1] == sum(words.values())

    with pytest.raises(Exception, match="'memory' state provider keeps nothing"):
        committed_state_frame(spark, name, {}).collect()
