"""The folder of running topologies, as ``sparkstorm list`` reads it."""

from __future__ import annotations

import json
import os

from sparkstorm.control import registry


def test_only_this_users_live_runs_are_listed(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKSTORM_RUN_DIR", str(tmp_path))
    registry.register("mine", "http://127.0.0.1:1", "t")
    theirs = tmp_path / "theirs.json"  # another user's run, alive, in a shared folder
    theirs.write_text(json.dumps({"name": "theirs", "pid": os.getpid(), "url": "u", "token": "x"}))
    os.chown(theirs, os.getuid() + 1, -1)  # root here; CI too
    assert list(registry.running()) == ["mine"]
    registry.unregister("mine")
    assert registry.running() == {}
