"""Stored state is signed, and nothing unsigned is loaded (issue 54, defect 3).

The attack of the review: whoever could write one field of a task's Redis hash (or one
file of a state folder, or a Redis windows key) ran code in every worker and driver that
loaded it, as a worker does at start, restart or rollback.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import re
import stat
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from sparkstorm.config import SPARKSTORM_STATE_SECRET, provider_config
from sparkstorm.state import signing
from sparkstorm.state.directory_store import DirectoryStore
from sparkstorm.state.key_value import KeyValueState
from sparkstorm.state.signing import Signer, UnsignedState, fill_state_secret, state_secret
from sparkstorm.state.stores import open_store
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
        bomb = Signer("a guessed secret").sign(bomb, ("the place it is planted",))
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
    other = {**config, "secret": "another deployment's secret, long enough"}
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


STRONG = "s" * signing.MIN_SECRET_BYTES


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A sparkstorm home with no key file yet, and no secret in the environment."""
    monkeypatch.setenv("SPARKSTORM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(signing.SECRET_ENV, raising=False)
    signing._file_secret.cache_clear()
    yield tmp_path / "home"
    signing._file_secret.cache_clear()


def test_the_secret_is_made_once_readable_by_its_user_only(fresh_home, monkeypatch):
    first = state_secret()
    signing._file_secret.cache_clear()
    assert state_secret() == first and len(first) == 64
    key = fresh_home / "state.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert sorted(p.name for p in fresh_home.iterdir()) == ["state.key"]  # nothing left aside
    monkeypatch.setenv(signing.SECRET_ENV, "e" * 32)
    assert state_secret() == "e" * 32
    assert state_secret({"secret": STRONG}) == STRONG


def _secret_at(barrier: Any, out: Any) -> None:
    barrier.wait()
    out.put(state_secret())


def test_processes_starting_together_on_a_fresh_home_all_get_the_same_whole_secret(fresh_home):
    # Issue 65, defect 1: the file was made (O_EXCL) and written after, so a process
    # that lost the race read it empty and signed with "" for its whole life.
    context = multiprocessing.get_context("fork")
    for trial in range(25):
        key = fresh_home / "state.key"
        key.unlink(missing_ok=True)
        signing._file_secret.cache_clear()
        barrier, out = context.Barrier(4), context.Queue()
        workers = [context.Process(target=_secret_at, args=(barrier, out)) for _ in range(4)]
        for worker in workers:
            worker.start()
        got = [out.get(timeout=30) for _ in workers]
        for worker in workers:
            worker.join(30)
        assert len(set(got)) == 1 and len(got[0]) == 64, f"trial {trial}: {got}"
        assert key.read_text() == got[0]


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("an empty key file", "holds 0 bytes, fewer than 32"),
        ("a short key file", "holds 5 bytes, fewer than 32"),
        ("a key file others may read", "chmod 600"),
        ("a key file of another user's", "not yours alone"),
        ("a short environment variable", "SPARKSTORM_STATE_SECRET has 5 bytes"),
        ("a short configured secret", "sparkstorm.state.secret (or the provider's secret)"),
    ],
)
def test_a_weak_secret_is_refused_in_one_line_saying_what_to_do(
    fresh_home, monkeypatch, where, says
):
    key = fresh_home / "state.key"
    fresh_home.mkdir(mode=0o700)
    config = None
    if where == "an empty key file":  # a first write killed half-way
        signing.write_private(key, b"")
    elif where == "a short key file":
        signing.write_private(key, b"short")
    elif where == "a key file others may read":
        signing.write_private(key, b"k" * 64)
        key.chmod(0o644)
    elif where == "a key file of another user's":
        signing.write_private(key, b"k" * 64)
        os.chown(key, 65534, 65534)  # nobody (the suite runs as root)
    elif where == "a short environment variable":
        monkeypatch.setenv(signing.SECRET_ENV, "short")
    else:
        config = {"secret": "short"}
    with pytest.raises(signing.WeakStateSecret, match=re.escape(says)) as caught:
        state_secret(config)
    assert "\n" not in str(caught.value)
    with pytest.raises(signing.WeakStateSecret):  # and a store, and so a run, will not open
        DirectoryStore({"path": str(fresh_home / "state"), **(config or {})}, "t")


def test_a_run_hands_its_secret_to_its_workers_in_the_configuration(tmp_path, monkeypatch):
    driver_secret = "d" * 64
    monkeypatch.setenv(signing.SECRET_ENV, driver_secret)
    conf: dict[str, Any] = {"topology.state.provider.config": {"path": str(tmp_path)}}
    fill_state_secret(conf)
    assert conf[SPARKSTORM_STATE_SECRET] == driver_secret
    monkeypatch.delenv(signing.SECRET_ENV)  # an executor on another host: no env, no file
    assert provider_config(conf)["secret"] == driver_secret
    store = DirectoryStore(provider_config(conf), "t")
    assert store.signer.verify(Signer(driver_secret).sign(b"x", ("p",)), "here", ("p",)) == b"x"
