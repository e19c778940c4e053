"""Stored state is signed, and nothing unsigned is loaded (issue 54, defect 3).

The attack of the review: whoever could write one field of a task's Redis hash (or one
file of a state folder, or a Redis windows key) ran code in every worker and driver that
loaded it, as a worker does at start, restart or rollback.
"""

from __future__ import annotations

import os
import pickle
import stat
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from sparkstorm.config import SPARKSTORM_STATE_SECRET, provider_config
from sparkstorm.state import signing
from sparkstorm.state.key_value import KeyValueState
from sparkstorm.state.signing import Signer, UnsignedState, fill_state_secret, state_secret
from sparkstorm.state.stores import DirectoryStore, open_store
from sparkstorm.trident.windowing import RedisWindowsStoreFactory
from tests.conftest import REDIS_URL


class RunsCode:
    """A pickle that, loaded, creates a file: what an attacker writes into a store."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mknod, (str(self.path),))


def committed(name: str, config: dict[str, Any], topology: str) -> None:
    state = KeyValueState(name, config, topology, "count:3")
    state.put("word", 41)
    state.prepare(0)
    open_store(name, config, topology).mark_committed(0)
    state.commit(0)


def tamper(name: str, config: dict[str, Any], topology: str, payload: bytes) -> str:
    """Overwrite the task's stored value with ``payload``; what the error must name."""
    if name == "redis":
        client = redis.Redis.from_url(config["url"])
        key = f"{config['key_prefix']}:{topology}:count:3"
        (field,) = client.hkeys(key)
        client.hset(key, field, payload)
        client.close()
        return key
    folder = Path(config["path"].removeprefix("file://")) / topology / "count" / "3"
    (delta,) = folder.glob("delta-0")
    delta.write_bytes(payload)
    return str(delta)


@pytest.mark.parametrize("how", ["an unsigned pickle", "a forged signature"])
def test_a_value_written_by_someone_else_is_refused_naming_it_and_never_loaded(
    provider, tmp_path, how
):
    name, config = provider
    topology = f"topo-{uuid.uuid4().hex[:8]}"
    committed(name, config, topology)
    planted = tmp_path / "ran"
    bomb = pickle.dumps(RunsCode(planted))
    if how == "a forged signature":
        bomb = Signer("a guessed secret").sign(bomb)
    where = tamper(name, config, topology, bomb)
    with pytest.raises(UnsignedState) as refused:
        open_store(name, config, topology).load("count:3")  # what a worker does at start
    assert where in str(refused.value)
    assert "state secret" in str(refused.value) and "docs/security.md" in str(refused.value)
    assert not planted.exists(), "a pickle from the store was loaded"


def test_values_written_with_the_secret_load_back(provider):
    name, config = provider
    topology = f"topo-{uuid.uuid4().hex[:8]}"
    committed(name, config, topology)
    assert open_store(name, config, topology).load("count:3") == (0, {"word": 41})
    other = {**config, "secret": "another deployment's"}
    with pytest.raises(UnsignedState):
        open_store(name, other, topology).load("count:3")


def test_a_redis_window_written_by_someone_else_is_refused(redis_prefix, tmp_path):
    store = RedisWindowsStoreFactory(REDIS_URL, redis_prefix).create({})
    try:
        store.put("w1", [("a", 1)])
        assert store.get("w1") == [("a", 1)]
        planted = tmp_path / "ran"
        client = redis.Redis.from_url(REDIS_URL)
        client.set(f"sparkstorm:trident:{redis_prefix}:windows:w1", pickle.dumps(RunsCode(planted)))
        client.close()
        with pytest.raises(UnsignedState, match=f"{redis_prefix}:windows:w1"):
            store.get("w1")
        assert not planted.exists()
    finally:
        store.remove("w1")
        store.shutdown()


def test_the_secret_is_made_once_readable_by_its_user_only(tmp_path, monkeypatch):
    monkeypatch.setattr(signing, "key_file", lambda: tmp_path / "home" / "state.key")
    monkeypatch.delenv(signing.SECRET_ENV, raising=False)
    signing._file_secret.cache_clear()
    first = state_secret()
    signing._file_secret.cache_clear()
    assert state_secret() == first and len(first) == 64
    key = tmp_path / "home" / "state.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    monkeypatch.setenv(signing.SECRET_ENV, "from the environment")
    assert state_secret() == "from the environment"
    assert state_secret({"secret": "configured"}) == "configured"


def test_a_run_hands_its_secret_to_its_workers_in_the_configuration(tmp_path, monkeypatch):
    monkeypatch.setenv(signing.SECRET_ENV, "the driver's")
    conf: dict[str, Any] = {"topology.state.provider.config": {"path": str(tmp_path)}}
    fill_state_secret(conf)
    assert conf[SPARKSTORM_STATE_SECRET] == "the driver's"
    monkeypatch.delenv(signing.SECRET_ENV)  # an executor on another host: no env, no file
    assert provider_config(conf)["secret"] == "the driver's"
    store = DirectoryStore(provider_config(conf), "t")
    assert store.signer.verify(Signer("the driver's").sign(b"x"), "here") == b"x"
