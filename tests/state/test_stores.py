"""The stores' two-phase commit: staged changes count once the marker reaches them."""

from __future__ import annotations

import pickle
import uuid
from typing import Any

import pytest
from pyarrow.fs import FileSelector, _MockFileSystem

from sparkstorm.config import provider_name
from sparkstorm.state.directory_store import DirectoryStore
from sparkstorm.state.key_value import KeyValueState
from sparkstorm.state.stores import DELETED, open_store


def fresh(provider: tuple[str, dict[str, Any]]) -> tuple[str, dict[str, Any], str]:
    name, config = provider
    return name, config, f"topo-{uuid.uuid4().hex[:8]}"


def test_staged_changes_are_invisible_until_the_marker_reaches_them(provider):
    name, config, topology = fresh(provider)
    store = open_store(name, config, topology)
    state = KeyValueState(name, config, topology, "count:3")
    state.put("a", 1)
    state.put("b", 2)
    state.prepare(0)
    assert store.load("count:3") == (-1, {})  # staged, not committed: a crash rolls back
    store.mark_committed(0)
    # a crash before the task folded it in: loading rolls forward to the marker
    assert store.load("count:3") == (0, {"a": 1, "b": 2})
    state.commit(0)
    state.delete("a")
    state.put("b", 3)
    state.prepare(1)  # never committed: the next load ignores it
    again = KeyValueState(name, config, topology, "count:3")
    assert dict(again.items()) == {"a": 1, "b": 2} and again.txid == 0
    assert store.committed_txid() == 0


def test_the_marker_records_its_sources_with_it(provider):
    name, config, topology = fresh(provider)
    store = open_store(name, config, topology)
    assert store.committed_sources() == {}
    store.mark_committed(0, {"sentences": ["m-1", 7]})
    assert store.committed_sources() == {"sentences": ["m-1", 7]}
    store.mark_committed(1)
    assert (store.committed_txid(), store.committed_sources()) == (1, {})


def test_a_commit_writes_only_what_changed_and_deletes_stick(provider):
    name, config, topology = fresh(provider)
    store = open_store(name, config, topology)
    state = KeyValueState(name, config, topology, "c:1")
    for i in range(100):
        state.put(i, i * i)
    assert state.prepare(0) == 100
    store.mark_committed(0)
    state.commit(0)
    state.delete(5)
    state.put(7, "seven")
    assert state.prepare(1) == 2  # keys written by this checkpoint
    store.mark_committed(1)
    state.commit(1)
    txid, data = store.load("c:1")
    assert txid == 1 and 5 not in data and data[7] == "seven" and len(data) == 99
    assert state.get(5, "gone") == "gone" and 5 not in state and len(state) == 99


def test_rollback_returns_to_the_last_commit(provider):
    name, config, topology = fresh(provider)
    store = open_store(name, config, topology)
    state = KeyValueState(name, config, topology, "c:1")
    state.put("x", 1)
    state.prepare(0)
    store.mark_committed(0)
    state.commit(0)
    state.put("x", 2)
    state.put("y", 1)
    state.prepare(1)
    state.put("z", 1)
    state.rollback()
    assert dict(state.items()) == {"x": 1}


def test_tasks_and_topologies_do_not_see_each_others_state(provider):
    name, config, topology = fresh(provider)
    one = KeyValueState(name, config, topology, "count:1")
    other_task = KeyValueState(name, config, topology, "count:2")
    other_topology = KeyValueState(name, config, topology + "-b", "count:1")
    one.put("k", "mine")
    one.prepare(0)
    open_store(name, config, topology).mark_committed(0)
    one.commit(0)
    assert KeyValueState(name, config, topology, "count:1").get("k") == "mine"
    assert other_task.get("k") is None and other_topology.get("k") is None
    assert KeyValueState(name, config, topology, "count:2").get("k") is None


def test_a_moved_durable_state_carries_only_its_changes(provider):
    name, config, topology = fresh(provider)
    state = KeyValueState(name, config, topology, "c:1")
    for i in range(10_000):
        state.put(i, i)
    state.prepare(0)
    open_store(name, config, topology).mark_committed(0)
    state.commit(0)
    state.put("new", 1)
    moved = pickle.dumps(state)
    assert len(moved) < 1_000  # the committed 10,000 keys stay in the store
    copy = pickle.loads(moved)
    assert copy.get(9_999) == 9_999 and copy.get("new") == 1 and len(copy) == 10_001


def test_the_memory_state_carries_everything_and_rolls_back():
    topology = f"topo-{uuid.uuid4().hex[:8]}"
    state = KeyValueState("memory", {}, topology, "c:1")
    state.put("a", 1)
    state.prepare(0)
    open_store("memory", {}, topology).mark_committed(0)
    state.commit(0)
    state.put("a", 2)
    copy = pickle.loads(pickle.dumps(state))
    assert copy.get("a") == 2
    copy.rollback()
    assert copy.get("a") == 1


def test_deleted_stays_one_object_through_pickle():
    assert pickle.loads(pickle.dumps({"k": DELETED}))["k"] is DELETED


def test_the_directory_store_rewrites_its_base_only_when_deltas_outweigh_it(tmp_path):
    config = {"path": str(tmp_path)}
    store = open_store("directory", config, "t")
    state = KeyValueState("directory", config, "t", "c:1")
    for txid in range(40):
        state.put(txid % 3, "x" * 100_000)  # ~100 KB of changes per checkpoint
        state.prepare(txid)
        store.mark_committed(txid)
        state.commit(txid)
    files = sorted(p.name for p in (tmp_path / "t" / "c" / "1").iterdir())
    assert any(f.startswith("base-") for f in files)
    assert len(files) <= 15, files  # deltas since the last base only
    assert store.load("c:1")[1] == {0: "x" * 100_000, 1: "x" * 100_000, 2: "x" * 100_000}


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("org.apache.storm.state.InMemoryKeyValueStateProvider", "memory"),
        ("org.apache.storm.redis.state.RedisKeyValueStateProvider", "redis"),
        ("directory", "directory"),
    ],
)
def test_storms_provider_names_are_accepted(given, name):
    assert provider_name(given) == name


def test_an_unknown_provider_is_an_error_listing_the_known_ones():
    with pytest.raises(ValueError, match=r"memory.*redis.*directory"):
        provider_name("hbase")


def checkpoint(store: DirectoryStore, txid: int, changes: dict[Any, Any]) -> None:
    """One whole checkpoint of task ``c:1``, as a stateful bolt and the driver run it."""
    store.stage("c:1", txid, changes)
    store.mark_committed(txid, {"spout": [txid]})
    store.commit("c:1", txid, changes, lambda: store.load("c:1")[1])


def test_the_directory_store_works_through_a_file_system_that_is_not_local():
    # pyarrow's in-memory file system stands in for HDFS: no os call may reach the path
    store = DirectoryStore({"path": "bucket/state"}, "t", filesystem=_MockFileSystem())
    for txid in range(12):
        checkpoint(store, txid, {txid % 2: "x" * 300_000})  # deltas soon outweigh the base
    store.stage("c:1", 12, {0: "uncommitted"})
    assert store.load("c:1") == (11, {0: "x" * 300_000, 1: "x" * 300_000})
    assert store.committed_sources() == {"spout": [11]}
    names = {i.base_name for i in store.fs.get_file_info(FileSelector("bucket", recursive=True))}
    assert sorted(n for n in names if n.startswith("COMMITTED")) == ["COMMITTED-11"]
    assert any(n.startswith("base-") for n in names), names


def test_the_directory_store_ignores_what_a_crashed_write_left_behind(tmp_path):
    store = DirectoryStore({"path": str(tmp_path)}, "t")
    checkpoint(store, 0, {"a": 1})
    (tmp_path / "t" / "COMMITTED-5.1f2e~").write_text('{"txid": 5, "sources": {}}')
    (tmp_path / "t" / "c" / "1" / "delta-1.9a0b~").write_bytes(b"half a pick")
    assert store.committed_txid() == 0
    assert store.load("c:1") == (0, {"a": 1})
    checkpoint(store, 1, {"a": 2})
    assert store.load("c:1") == (1, {"a": 2})


def test_the_directory_store_takes_a_relative_path_as_the_directory_it_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    checkpoint(DirectoryStore({"path": "state"}, "t"), 0, {"a": 1})
    monkeypatch.chdir("/")
    assert DirectoryStore({"path": str(tmp_path / "state")}, "t").load("c:1") == (0, {"a": 1})


def test_a_uri_the_directory_store_cannot_open_is_a_clear_error():
    with pytest.raises(
        ValueError, match=r"'directory' state provider cannot open 'nope://x/y'.*hdfs://"
    ):
        DirectoryStore({"path": "nope://x/y"}, "t")
