"""Signed state is bound to its place and checkpoint (issue 65, defect 6).

The attacks of the review, each by someone who can write to the store but has no state
secret: one key's value copied onto another, a value from another topology planted, an
older value of a key put back, a state folder's delta file copied over a later one, and
the unsigned markers (``:committed``, ``:committed:sources``) changed. Each was loaded
silently as the committed state; each is now refused in one line naming it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import pickle
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from sparkstorm.state.signing import OlderState, UnsignedState
from sparkstorm.state.stores import open_store
from tests.conftest import REDIS_URL
from tests.test_cli import sparkstorm

SECRET = "the deployment's own state secret, 64 bytes of it, or near enough"
TASKS = ("count:3", "count:4")


def checkpoint(name: str, config: dict[str, Any], topology: str, txid: int, **puts: Any) -> None:
    """What a run does at a checkpoint: every task stages, the marker, every task folds."""
    store = open_store(name, config, topology)
    for task in TASKS:
        store.stage(task, txid, dict(puts))
    store.mark_committed(txid, {"spout": [f"m{txid}"]})
    for task in TASKS:
        store.commit(task, txid, dict(puts), lambda: dict(puts))


def loads(name: str, config: dict[str, Any], topology: str) -> Any:
    """What a worker does at start: the marker's sources, then its task's state."""
    store = open_store(name, config, topology)
    return store.committed_sources(), store.load("count:3")


class Redis:
    """Two checkpoints in Redis, and a copy of every key as it was after the first."""

    def __init__(self, prefix: str, serializer: str = "pickle") -> None:
        self.config = {"url": REDIS_URL, "key_prefix": prefix, "serializer": serializer}
        self.topology = f"topo-{uuid.uuid4().hex[:8]}"
        self.client = redis.Redis.from_url(REDIS_URL)
        self.keys = f"{prefix}:{self.topology}"
        checkpoint("redis", self.config, self.topology, 0, alpha=1, beta=2)
        self.earlier = {
            key.decode(): self.client.dump(key) for key in self.client.keys(f"{self.keys}:*")
        }
        checkpoint("redis", self.config, self.topology, 1, alpha=10)

    def field(self, task: str, key: str) -> bytes:
        hash_name = f"{self.keys}:{task}"
        for field in self.client.hkeys(hash_name):
            if pickle.dumps(key, protocol=5) in field or json.dumps(key).encode() == field:
                return field
        msg = f"no field for {key!r} in {hash_name}"
        raise AssertionError(msg)

    def put_back(self, key: str) -> None:
        self.client.restore(key, 0, self.earlier[key], replace=True)


@pytest.fixture
def in_redis(redis_prefix: str) -> Iterator[Redis]:
    state = Redis(redis_prefix)
    yield state
    state.client.close()


def test_state_no_one_touched_loads_back_exactly(in_redis, tmp_path):
    assert loads("redis", in_redis.config, in_redis.topology) == (
        {"spout": ["m1"]},
        (1, {"alpha": 10, "beta": 2}),
    )
    folder = Directory(tmp_path)
    assert loads("directory", folder.config, folder.topology) == (
        {"spout": ["m1"]},
        (1, {"alpha": 10, "beta": 2}),
    )


@pytest.mark.parametrize(
    "attack",
    [
        "one key's value copied onto another",
        "a value from another task",
        "a value from another topology",
        "an older value of a key put back",
        "an entry dropped",
        "an entry added from a staged change",
        "the marker put back to an earlier one",
        "the marker's sources changed",
    ],
)
def test_a_redis_store_writer_without_the_secret_is_refused_naming_what(
    in_redis, redis_prefix, attack
):
    state, client = in_redis, in_redis.client
    task, other = f"{state.keys}:count:3", f"{state.keys}:count:4"
    alpha, beta = state.field("count:3", "alpha"), state.field("count:3", "beta")
    says = f"Redis hash {task} is not what its task committed (checkpoint 1)"
    if attack == "one key's value copied onto another":
        client.hset(task, beta, client.hget(task, alpha))
    elif attack == "a value from another task":
        client.hset(task, alpha, client.hget(other, state.field("count:4", "alpha")))
    elif attack == "a value from another topology":
        elsewhere = Redis(redis_prefix)
        planted = client.hget(f"{elsewhere.keys}:count:3", elsewhere.field("count:3", "alpha"))
        client.hset(task, alpha, planted)
        elsewhere.client.close()
    elif attack == "an older value of a key put back":
        client.restore(f"{task}:then", 0, state.earlier[task])
        older = client.hget(f"{task}:then", alpha)
        client.delete(f"{task}:then")
        client.hset(task, alpha, older)  # alpha = 1 again, signed for this very place
    elif attack == "an entry dropped":
        client.hdel(task, beta)
    elif attack == "an entry added from a staged change":
        client.hset(task, b"extra", client.hget(task, beta))
    elif attack == "the marker put back to an earlier one":
        state.put_back(f"{state.keys}:committed")
        says = f"Redis hash {task} is as of checkpoint 1, after the topology's commit marker (0)"
    else:
        raw = client.get(f"{state.keys}:committed")
        client.set(f"{state.keys}:committed", raw.replace(b'"m1"', b'"m2"'))
        says = f"the topology's commit marker (Redis key {state.keys}:committed) is not signed"
    with pytest.raises(UnsignedState) as refused:
        loads("redis", state.config, state.topology)
    assert says in str(refused.value), str(refused.value)
    assert "\n" not in str(refused.value) and "docs/security.md" in str(refused.value)


def test_json_state_readable_in_redis_is_checked_whole_too(redis_prefix):
    state = Redis(redis_prefix, serializer="json")
    try:
        task = f"{state.keys}:count:3"
        assert state.client.hget(task, b'"alpha"') == b"10"  # readable, as documented
        state.client.hset(task, b'"alpha"', b"1000")
        with pytest.raises(UnsignedState, match="is not what its task committed"):
            loads("redis", state.config, state.topology)
    finally:
        state.client.close()


class Directory:
    """Two checkpoints in a state folder, and a copy of it as it was after the first."""

    def __init__(self, root: Path, topology: str | None = None) -> None:
        self.config = {"path": str(root / "state")}
        self.topology = topology or f"topo-{uuid.uuid4().hex[:8]}"
        self.folder = root / "state" / self.topology
        checkpoint("directory", self.config, self.topology, 0, alpha=1, beta=2)
        self.earlier = root / f"earlier-{self.topology}"
        shutil.copytree(self.folder, self.earlier)
        checkpoint("directory", self.config, self.topology, 1, alpha=10)


@pytest.mark.parametrize(
    "attack",
    [
        "a delta copied over a later one",
        "another task's delta",
        "another topology's delta",
        "the marker copied to another txid",
    ],
)
def test_a_state_folder_writer_without_the_secret_is_refused_naming_what(tmp_path, attack):
    state = Directory(tmp_path)
    delta = state.folder / "count" / "3" / "delta-1"
    says = f"state file {delta.as_posix()} is not signed"
    if attack == "a delta copied over a later one":
        shutil.copy(state.folder / "count" / "3" / "delta-0", delta)
    elif attack == "another task's delta":
        shutil.copy(state.folder / "count" / "4" / "delta-1", delta)
    elif attack == "another topology's delta":
        elsewhere = Directory(tmp_path / "elsewhere")
        shutil.copy(elsewhere.folder / "count" / "3" / "delta-1", delta)
    else:
        marker = state.folder / "COMMITTED-7"
        shutil.copy(state.folder / "COMMITTED-1", marker)
        says = f"state file {marker.as_posix()} is not signed"
    with pytest.raises(UnsignedState) as refused:
        loads("directory", state.config, state.topology)
    assert says in str(refused.value), str(refused.value)


def _older(secret: str, payload: bytes) -> bytes:
    """A value as the sparkstorm before this one signed it: a MAC of the payload alone."""
    return b"ss1:" + hmac.digest(secret.encode(), payload, hashlib.sha256) + payload


def _older_redis_state(prefix: str, topology: str, secret: str) -> None:
    """Checkpoint 4 of task count:3, written in the earlier format: bare txids, unsigned
    sources, values signed without their place, and a staged change the marker commits."""
    client, keys = redis.Redis.from_url(REDIS_URL), f"{prefix}:{topology}"
    signed = {
        _older(secret, pickle.dumps(k, protocol=5)): _older(secret, pickle.dumps(v, protocol=5))
        for k, v in {"alpha": 1, "beta": 2}.items()
    }
    client.hset(f"{keys}:count:3", mapping=signed)
    client.set(f"{keys}:count:3:txid", 3)
    staged = {_older(secret, pickle.dumps("alpha", protocol=5)): _older(secret, pickle.dumps(5))}
    client.hset(f"{keys}:count:3:staged:4", mapping=staged)
    client.sadd(f"{keys}:count:3:staged", 4)
    client.set(f"{keys}:committed", 4)
    client.set(f"{keys}:committed:sources", json.dumps({"spout": ["m4"]}))
    client.close()


def test_state_an_earlier_sparkstorm_wrote_is_refused_until_signed_again(redis_prefix, tmp_path):
    topology = f"topo-{uuid.uuid4().hex[:8]}"
    config = {"url": REDIS_URL, "key_prefix": redis_prefix, "secret": SECRET}
    _older_redis_state(redis_prefix, topology, SECRET)
    with pytest.raises(OlderState) as refused:
        loads("redis", config, topology)
    assert f"run `sparkstorm state {topology} --resign` once" in str(refused.value)

    given = ["--conf", "topology.state.provider=redis"]
    given += ["--conf", f"topology.state.provider.config={json.dumps(config)}"]
    resigned = sparkstorm("state", topology, *given, "--resign")
    assert resigned.returncode == 0, resigned.stderr
    assert f"{topology}: 1 task(s) or file(s) signed again" in resigned.stdout
    assert loads("redis", config, topology) == ({"spout": ["m4"]}, (4, {"alpha": 5, "beta": 2}))
    again = sparkstorm("state", topology, *given, "--resign")  # nothing left to do
    assert again.returncode == 0 and ": 0 task(s)" in again.stdout

    # Earlier state signed with another secret is not the deployment's: never loaded.
    other = f"topo-{uuid.uuid4().hex[:8]}"
    _older_redis_state(redis_prefix, other, "someone else's secret, long enough to pass")
    forged = sparkstorm("state", other, *given, "--resign")
    assert forged.returncode == 1
    assert "is not signed with this deployment's state secret" in forged.stderr


def test_a_state_folder_an_earlier_sparkstorm_wrote_is_signed_again(tmp_path):
    topology, root = "counts", tmp_path / "state"
    task = root / topology / "count" / "3"
    task.mkdir(parents=True)
    (task / "delta-2").write_bytes(_older(SECRET, pickle.dumps({"alpha": 3}, protocol=5)))
    marker = {"txid": 2, "sources": {"spout": ["m2"]}}
    (root / topology / "COMMITTED-2").write_text(json.dumps(marker))
    config = {"path": str(root), "secret": SECRET}
    with pytest.raises(OlderState, match="--resign"):
        loads("directory", config, topology)
    assert open_store("directory", config, topology).resign() == 2  # type: ignore[attr-defined]
    assert loads("directory", config, topology) == ({"spout": ["m2"]}, (2, {"alpha": 3}))
