"""Files only their user reaches (issue 54, defects 4 and 7).

The attacks of the review, on a shared machine: another user makes the temporary folder
Spark's logs go to first (owning every later run's logs, or planting links), or a link
where the run registry writes its control token. Root runs the suite (CI too), so
"another user" is a folder chown'd to another uid, as ``os.chown`` lets root do.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import tempfile

import pytest

from sparkstorm.control import registry
from sparkstorm.engines.spark import session
from sparkstorm.private_files import NotPrivate, private_dir, write_private
from sparkstorm.tasks.log_levels import LogLevels

STRANGER = os.getuid() + 1


@pytest.fixture
def tmpdir_of_its_own(tmp_path, monkeypatch):
    shared = tmp_path / "tmp"
    shared.mkdir(mode=0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    return shared


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_sparks_logs_go_to_a_folder_of_the_users_own(tmpdir_of_its_own):
    log_file = session._log_file()
    folder = log_file.parent
    assert folder.name == f"sparkstorm-{os.getuid()}"
    assert os.lstat(folder).st_uid == os.getuid() and mode(folder) == 0o700
    config = session._log_config(log_file)
    assert mode(config) == 0o600 and str(log_file) in config.read_text()


@pytest.mark.parametrize("taken_by", ["another user's folder", "a link"])
def test_a_temp_folder_someone_else_made_first_is_not_used_and_the_run_goes_on(
    tmpdir_of_its_own, taken_by, caplog
):
    wanted = tmpdir_of_its_own / f"sparkstorm-{os.getuid()}"
    elsewhere = tmpdir_of_its_own / "the-strangers"
    elsewhere.mkdir()
    if taken_by == "a link":
        wanted.symlink_to(elsewhere)
    else:
        wanted.mkdir(mode=0o777)
        os.chown(wanted, STRANGER, -1)
    with caplog.at_level(logging.WARNING, logger="sparkstorm.private_files"):
        log_file = session._log_file()
    folder = log_file.parent
    assert folder != wanted and folder.resolve() != elsewhere
    assert os.lstat(folder).st_uid == os.getuid() and mode(folder) == 0o700
    assert any(str(wanted) in r.getMessage() for r in caplog.records)
    session._log_config(log_file)
    assert list(elsewhere.iterdir()) == []  # nothing written where the stranger points


def test_a_private_file_is_never_written_through_a_link(tmp_path):
    target = tmp_path / "victim"
    target.write_text("the user's own file")
    link = tmp_path / "planted"
    link.symlink_to(target)
    with pytest.raises(OSError):
        write_private(link, b"overwritten")
    assert target.read_text() == "the user's own file"


def test_the_run_registry_is_the_users_alone(tmp_path, monkeypatch):
    folder = tmp_path / ".sparkstorm" / "running"
    folder.mkdir(parents=True, mode=0o755)  # as an older sparkstorm made it
    os.chmod(folder, 0o755)
    monkeypatch.setenv("SPARKSTORM_RUN_DIR", str(folder))
    victim = tmp_path / "victim"
    victim.write_text("kept")
    (folder / "planted.json").symlink_to(victim)
    with pytest.raises(OSError):
        registry.register("planted", "http://127.0.0.1:1", "token")
    assert victim.read_text() == "kept"
    path = registry.register("mine", "http://127.0.0.1:1", "token")
    assert mode(folder) == 0o700 and mode(path) == 0o600
    assert json.loads(path.read_text())["token"] == "token"
    registry.unregister("mine")
    os.chown(folder, STRANGER, -1)
    with pytest.raises(NotPrivate, match="belongs to user id"):
        private_dir(folder)


def test_py4j_logs_no_secret_at_any_level(caplog):
    """logconfig set ROOT to DEBUG, and py4j printed its gateway token in the console."""
    LogLevels().set("ROOT", "DEBUG", 1)  # as the API's logconfig does
    try:
        with caplog.at_level(logging.DEBUG):
            py4j_line = "Command to send: A\nthe-gateway-secret\n"  # py4j's own line
            logging.getLogger("py4j.clientserver").debug(py4j_line)
    finally:
        logging.getLogger().setLevel(logging.WARNING)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("py4j")]
    assert lines == ["Command to send: (21 characters, not shown: they may hold secrets)"]
