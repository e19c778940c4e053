"""Spark's own UI: nobody who reaches it can end a run (issue 65, defect 3).

The UI asks no one who they are, and a run's Spark UI is on by default. Its kill links
ended the continuous mode's stage: seven kills in 40 s by another local user made a run
give up. The kill handlers are off unless a user turns them on.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.request

import pytest

from tests.run_process import ROOT, RunProcess

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
"""A Python user nobody may run (the suite's own may sit in root's home)."""
STRANGER = """
import re, sys, urllib.error, urllib.parse, urllib.request
base, stage, job = sys.argv[1], sys.argv[2], sys.argv[3]
page = urllib.request.urlopen(base + "/stages/").read().decode()
token = re.search(r'name="csrfToken" value="([^"]+)"', page)  # anyone can read it
extra = {"csrfToken": token.group(1)} if token else {}
said = []
for path, ident in (("/stages/stage/kill/", stage), ("/jobs/job/kill/", job)):
    form = urllib.parse.urlencode({"id": ident, "terminate": "true", **extra})
    for url, data in ((base + path + "?" + form, None), (base + path, form.encode())):
        try:  # a GET, then the page's own form's POST
            with urllib.request.urlopen(url, data=data) as answer:
                said.append(answer.status)
        except urllib.error.HTTPError as exc:
            said.append(exc.code)
print(said)
"""


def _json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def test_another_local_user_cannot_kill_a_run_through_the_spark_ui(tmp_path):
    run = RunProcess(
        str(ROOT / "tests/cli_topologies.py") + ":steady",
        "continuous",
        tmp_path,
        env={},
        spark_ui=True,
    )
    run.until(lambda: "Spark UI: http" in run.output(), "the Spark UI's address", 120)
    base = re.search(r"Spark UI: (http://\S+)", run.output()).group(1).rstrip("/")
    (app,) = _json(f"{base}/api/v1/applications")
    api = f"{base}/api/v1/applications/{app['id']}"
    deadline = time.monotonic() + 60
    while not (stages := _json(f"{api}/stages?status=active")):
        assert time.monotonic() < deadline, "the workers' stage never became active"
        time.sleep(0.5)
    (job,) = _json(f"{api}/jobs?status=running")
    for _ in range(3):  # as user nobody, as another user on the machine would
        tried = subprocess.run(
            [SYSTEM_PYTHON, "-c", STRANGER, base, str(stages[0]["stageId"]), str(job["jobId"])],
            capture_output=True,
            text=True,
            timeout=30,
            user=NOBODY,
            check=False,
        )
        assert tried.returncode == 0, tried.stderr
        time.sleep(1)
    time.sleep(3)  # a killed stage is said as a lost worker within a second or two
    assert run.process.poll() is None, run.output()[-3000:]
    assert "worker was lost" not in run.output(), run.output()[-3000:]
    assert _json(f"{api}/stages?status=active"), "the workers' stage is gone"
    environment = _json(f"{api}/environment")["sparkProperties"]  # --spark-conf can say true
    assert ["spark.ui.killEnabled", "false"] in environment
    assert run.stop() == 130


pytestmark = pytest.mark.spark
