"""The web page of a running topology in a real headless Chromium.

Debian's chromium and chromium-driver (``scripts/install-browser`` installs them),
driven by Selenium. The page must show what the REST API shows, and its buttons must
deactivate, activate and kill the run. The test saves a screenshot of the page into
``$SPARKSTORM_SCREENSHOTS`` (docs/images for the one in docs/getting-started.md), or
into its temporary directory.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

from tests.cli_topologies import halting, observed, steady_stateful
from tests.test_control import Running

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
# As root, on a machine whose network is closed: no sandbox, no background connections.
CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
SIZES = [(390, 844), (1280, 800), (1920, 1080)]
"""A phone, a laptop, a desktop."""
ROWS = """
return [...document.querySelectorAll(`#${arguments[0]} tr[data-id]`)].map((tr) => [
  tr.dataset.id,
  Object.fromEntries([...tr.cells].map((td) => [td.dataset.field, td.textContent])),
]);
"""


GRAPH_FIT = """
const svg = document.getElementById("graph");
const nodes = [...svg.querySelectorAll(".node")];
if (!nodes.length) return null;
const overflowing = nodes.filter(
  (n) => n.querySelector(".name").getBBox().width > n.querySelector("rect").getBBox().width - 10,
).map((n) => n.querySelector(".name").textContent);
return {
  scale: svg.getBoundingClientRect().width / svg.viewBox.baseVal.width,
  names: nodes.map((n) => n.querySelector(".name").textContent),
  overflowing,
};
"""
"""The graph's drawn size over its own, its nodes' names, and those wider than their box."""

LABELS_CLEAR = """
const svg = document.getElementById("graph");
const boxes = (selector) => [...svg.querySelectorAll(selector)].map((element) => {
  const r = element.getBoundingClientRect();
  return {text: element.textContent, x: r.left, y: r.top, right: r.right, bottom: r.bottom};
});
const labels = boxes(".edge-label"), nodes = boxes(".node rect");
const meet = (a, b) => a.x < b.right && b.x < a.right && a.y < b.bottom && b.y < a.bottom;
const clashes = [];
labels.forEach((a, i) => {
  labels.slice(i + 1).forEach((b) => { if (meet(a, b)) clashes.push([a.text, b.text]); });
  nodes.forEach((n) => { if (meet(a, n)) clashes.push([a.text, "a box"]); });
});
const order = [...svg.children];
const lastEdge = Math.max(...order.map((c, i) => (c.classList.contains("edge") ? i : -1)));
const firstLabel = order.findIndex((c) => c.classList.contains("edge-label"));
return {
  labels: labels.map((l) => l.text),
  edges: svg.querySelectorAll(".edge").length,
  clashes,
  over_lines: firstLabel > lastEdge,
  right: Math.max(...labels.map((l) => l.right), ...nodes.map((n) => n.right)),
};
"""
"""Every edge's label, those that meet another label or a box, and whether the labels
are drawn over every line (after them)."""


def open_browser() -> webdriver.Chrome:
    """A headless Chromium (it fails, saying how to install it, where it is missing)."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(path)]
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} not found: the page tests need Debian's chromium and "
            "chromium-driver; run scripts/install-browser"
        )
    options = Options()
    options.binary_location = CHROMIUM
    for arg in CHROMIUM_ARGS:
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_window_size(1400, 1150)
    return driver


@pytest.fixture(scope="module")
def browser():
    driver = open_browser()
    yield driver
    driver.quit()


def until(condition, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"no {what} after {timeout}s"
        time.sleep(0.2)
    return value


def plots_fit(browser):
    """Whether the three plots are drawn, each no wider than its box."""
    sizes = browser.execute_script(
        "return [...document.querySelectorAll('.plots figure > div')].map((d) => "
        "[d.clientWidth, d.querySelector('canvas') ? d.querySelector('canvas')"
        ".getBoundingClientRect().width : -1])"
    )
    return len(sizes) == 3 and all(0 <= canvas <= box + 1 for box, canvas in sizes)


def text_of(browser, selector):
    """The text of the first element ``selector`` finds, read in one script (or None)."""
    return browser.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : null",
        selector,
    )


def rows(browser, table_id):
    """The rows of one of the page's tables, each {field: text}."""
    return [cells for _, cells in browser.execute_script(ROWS, table_id)]


def table(browser, table_id):
    """The page's table as {row id: {field: text}}."""
    return dict(browser.execute_script(ROWS, table_id))


def shown(text):
    """What the page shows for an API value."""
    if text in ("", None):
        return "-"
    if isinstance(text, int | float):
        return f"{text:,.3f}".rstrip("0").rstrip(".")
    return str(text)


def differences(page_rows, api_rows, key):
    """Cells where the page does not show what the API says (capacity moves with time)."""
    wrong = []
    for row in api_rows:
        cells = page_rows.get(row[key], {})
        wrong += [
            (row[key], field, text, row[field])
            for field, text in cells.items()
            if field != "capacity" and text != shown(row[field])
        ]
        if not cells:
            wrong.append((row[key], "row missing", None, None))
    return wrong


def answer(browser, words, keys=None, accept=True):
    """Answer the confirmation the page shows, checking what it asks."""
    dialog = WebDriverWait(browser, 10).until(expected_conditions.alert_is_present())
    assert words in dialog.text, dialog.text
    if keys is not None:
        dialog.send_keys(keys)
    dialog.accept() if accept else dialog.dismiss()


def test_the_page_shows_what_the_api_shows_and_its_buttons_control_the_run(browser, tmp_path):
    live = Running("local", None, "web-page", make=observed)
    try:
        topology = f"/{live.name}"
        live.until(lambda: live.get(topology + "/component/check")["lastError"], "an error")
        browser.get(live.url + "/")
        until(lambda: browser.find_element(By.ID, "status").text == "ACTIVE", "ACTIVE shown")
        until(
            lambda: len(live.get(topology + "/timeseries?window=600")["time"]) >= 6,
            "six seconds of history",
        )
        time.sleep(2.5)  # one more refresh of the page, with that history
        canvases = browser.find_elements(By.CSS_SELECTOR, ".plots canvas")
        assert len(canvases) >= 3, "the three plots are drawn"
        # the DAG, as Storm UI draws it: a node per component, an arrow per subscription
        # (read in one script each time: the page draws it anew at every refresh)
        api = live.get(topology)
        drawn = browser.execute_script(
            "return [[...document.querySelectorAll('#graph .node')].map((n) => n.dataset.id),"
            " document.querySelectorAll('#graph .edge').length]"
        )
        assert sorted(drawn[0]) == sorted(c["id"] for c in api["graph"]["components"])
        assert drawn[1] == len(api["graph"]["edges"]) > 0
        # a core topology's edges say what flows on them too (issue 67, item 6)
        expected = ["n · shuffle", "n · fields(n)"]
        assert [e["label"] for e in api["graph"]["edges"]] == expected, api["graph"]
        labelled = browser.execute_script(LABELS_CLEAR)
        assert sorted(labelled["labels"]) == sorted(expected), labelled
        assert not labelled["clashes"], labelled
        until(
            lambda: re.fullmatch(r"[\d,]+ /s", text_of(browser, "#graph .node .rate") or ""),
            "a rate on the spout's node",
        )
        # at the sizes people use, a page never scrolls sideways: wide tables scroll alone
        for width, height in SIZES:
            browser.set_window_size(width, height)
            for path, table_id in (("/", "spouts"), ("/component/check", "tasks")):
                browser.get(live.url + path)
                until(lambda table_id=table_id: rows(browser, table_id), "rows")
                overflow = browser.execute_script(
                    "return document.documentElement.scrollWidth - window.innerWidth"
                )
                assert overflow <= 1, f"{path} at {width}x{height} scrolls sideways by {overflow}"
        browser.set_window_size(1400, 1150)
        browser.get(live.url + "/")
        until(lambda: text_of(browser, "#graph .node"), "the graph")
        # Storm UI's summary and its topology stats, every window side by side
        summary = live.get("/summary")["topologies"][0]
        until(lambda: text_of(browser, '#summary td[data-field="Memory"]'), "the memory")
        assert text_of(browser, '#summary td[data-field="Workers"]') == "1"  # the driver
        assert text_of(browser, '#summary td[data-field="Executors"]') == str(
            summary["executorsTotal"]
        )
        assert text_of(browser, '#summary td[data-field="Version"]').startswith("sparkstorm 0.1.0")
        assert [r["windowPretty"] for r in rows(browser, "topology-stats")] == [
            "10m",
            "3h",
            "1d",
            "All time",
        ]
        # system stats: hidden, then shown and kept in the address across a reload
        assert "__acker" not in table(browser, "bolts")
        browser.find_element(By.ID, "system").click()
        until(lambda: "__acker" in table(browser, "bolts"), "the ackers shown")
        browser.execute_script(
            "const s = document.getElementById('window'); s.value = '600';"
            " s.dispatchEvent(new Event('change'))"
        )
        until(lambda: "window=600" in browser.current_url, "the window in the address")
        assert "sys=true" in browser.current_url
        browser.refresh()
        until(lambda: "__acker" in table(browser, "bolts"), "the ackers shown after a reload")
        assert browser.execute_script("return document.getElementById('window').value") == "600"
        browser.get(live.url + "/")
        until(lambda: text_of(browser, "#configuration th"), "the configuration")
        # the configuration, passwords masked
        assert api["configuration"]["topology.message.timeout.secs"] > 0
        config_rows = browser.execute_script(
            "return [...document.querySelectorAll('#configuration th')].map((th) => th.textContent)"
        )
        assert "topology.message.timeout.secs" in config_rows
        until(  # the plots are drawn once the page's first history fetch came back
            lambda: "numbers acked" in browser.find_element(By.ID, "plot-rates").text,
            "the rates plot's legend",
        )
        screenshots = Path(os.environ.get("SPARKSTORM_SCREENSHOTS") or tmp_path)
        screenshots.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(screenshots / "topology-page.png"))

        browser.find_element(By.ID, "kill").click()
        answer(browser, "Kill topology web-page?", accept=False)  # thought better of it
        browser.find_element(By.ID, "deactivate").click()
        answer(browser, "Deactivate topology web-page?")
        live.until(lambda: live.get(topology)["status"] == "INACTIVE", "INACTIVE")
        live.until(lambda: live.get("/summary")["topologies"][0]["inFlight"] == 0, "drained")
        time.sleep(1.0)  # the last trees complete; the counts stop moving

        def page_matches_api():
            api = live.get(topology)
            wrong = differences(table(browser, "spouts"), api["spouts"], "spoutId")
            wrong += differences(table(browser, "bolts"), api["bolts"], "boltId")
            return not wrong or print("page differs from the API:", wrong)

        until(page_matches_api, "page showing the API's counts", timeout=15)
        until(  # the page refreshes every 2 s: its tables may come before its status
            lambda: browser.find_element(By.ID, "status").text == "INACTIVE", "INACTIVE shown"
        )
        spouts = table(browser, "spouts")
        assert int(spouts["numbers"]["failed"].replace(",", "")) > 0  # the failures show
        assert any("is not wanted" in row["error"] for row in rows(browser, "errors"))
        # where each error came from, and how many in all
        assert {row["host"] for row in rows(browser, "errors")} == {socket.gethostname()}
        total = live.get(topology)["errorsTotal"]
        assert f"({total:,} in all" in text_of(browser, "#error-count")
        times = [row["time"] for row in rows(browser, "errors")]
        assert all(re.search(r"\d:\d\d:\d\d", t) for t in times), times  # clock times

        browser.get(live.url + "/component/check")
        check = live.get(topology + "/component/check")
        until(lambda: len(table(browser, "tasks")) == 2, "the two tasks of check")
        tasks = table(browser, "tasks")
        for task in check["executorStats"]:
            assert tasks[task["id"]]["executed"] == shown(task["executed"])
            assert tasks[task["id"]]["failed"] == shown(task["failed"])
        assert sum(int(row["count"]) for row in rows(browser, "errors")) == sum(
            e["count"] for e in check["componentErrors"]
        )
        # Storm UI's input and output stats: per source stream, per stream emitted on
        assert check["outputStats"], "check emits to store"
        (source,) = check["inputStats"]
        assert (source["component"], source["stream"]) == ("numbers", "default")
        assert source["executed"] == check["executed"] > 0
        assert [(r["component"], r["stream"], r["executed"]) for r in rows(browser, "inputs")] == [
            ("numbers", "default", shown(source["executed"]))
        ]
        assert [(r["stream"], r["emitted"]) for r in rows(browser, "outputs")] == [
            (s["stream"], shown(s["emitted"])) for s in check["outputStats"]
        ]

        before = live.acked()
        browser.find_element(By.ID, "activate").click()
        answer(browser, "Activate topology web-page?")
        live.until(lambda: live.acked() > before, "tuples after the page activated it")

        browser.find_element(By.ID, "kill").click()
        answer(browser, "Kill topology web-page?", keys="5")
        live.thread.join(60)
        assert not live.thread.is_alive(), "the page's kill did not stop the run"
        assert not live.result.interrupted  # a kill asked for is a clean stop
        until(lambda: browser.find_element(By.ID, "gone").is_displayed(), "the stop shown")
        assert "killed" in browser.find_element(By.ID, "gone").text
    finally:
        if live.thread.is_alive():
            httpx.post(f"{live.url}/api/v1/topology/{live.name}/kill/0")
            live.thread.join(60)


def test_a_page_outlives_its_driver_saying_the_run_halted_and_why(browser):
    """The run halts; the page shows HALTED and why, then that the driver is gone."""
    live = Running("local", None, "web-halting", make=halting)
    browser.get(live.url + "/")
    until(lambda: text_of(browser, "#status") == "ACTIVE", "ACTIVE shown")
    live.thread.join(60)
    assert live.result is not None and live.result.errors.halted is not None
    said = until(
        lambda: (
            "The run is gone" in (text_of(browser, "#gone") or "") and text_of(browser, "#gone")
        ),
        "the banner",
        20,
    )
    assert "It halted: " in said and "the ledger is full: halting" in said, said
    assert text_of(browser, "#status") == "HALTED"  # how it ended, not just GONE
    assert browser.execute_script("return document.getElementById('kill').disabled")
    # asked less often: the next question waits twice as long each time, up to a minute
    assert re.search(r"Asking again in (4|8|16|32) s", said), said


CONTROLS = [
    "activate",
    "deactivate",
    "rebalance",
    "debug",
    "kill",
    "dump-stacks",
    "cpu-profile",
    "worker-log",
    "set-log-level",
]
"""Every button of the page that acts on the run."""

CONTRAST = """
const luminance = (color) => {
  const [r, g, b] = color.match(/[\\d.]+/g).slice(0, 3).map(Number).map((v) => {
    v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};
return arguments[0].map((id) => {
  const style = getComputedStyle(document.getElementById(id));
  const [a, b] = [luminance(style.color), luminance(style.backgroundColor)].sort((x, y) => y - x);
  return [id, (a + 0.05) / (b + 0.05)];
});
"""
"""WCAG's contrast ratio of each button's text against its background."""


@pytest.mark.parametrize(("width", "how"), [(390, "ctrl-c"), (1280, "kill")])
def test_a_stopped_run_shows_killed_how_and_its_final_figures(
    browser, tmp_path, monkeypatch, width, how
):
    """Ctrl-C or ``sparkstorm kill``: the page says KILLED and how, shows the figures the
    run ended with (those of its final table), and turns every control off, readably."""
    from sparkstorm.control import registry
    from tests.run_process import RunProcess

    monkeypatch.setenv("SPARKSTORM_RUN_DIR", str(tmp_path / "running"))
    name, stats = f"web-stop-{width}", tmp_path / "stats.json"
    env = {"SPARKSTORM_RUN_DIR": str(tmp_path / "running")}
    target = "tests.cli_topologies:steady"
    run = RunProcess(target, "local", tmp_path, "--name", name, "--stats-json", str(stats), env=env)
    try:
        run.until(lambda: name in registry.running(), "the run registered", 60)
        browser.set_window_size(width, 844)
        browser.get(registry.lookup(name)["url"] + "/")
        until(lambda: text_of(browser, "#status") == "ACTIVE", "ACTIVE shown")
        until(lambda: rows(browser, "spouts"), "the spouts' figures")
        enabled = browser.execute_script(
            "return arguments[0].filter((id) => !document.getElementById(id).disabled)",
            CONTROLS,
        )
        assert {"deactivate", "debug", "kill", "dump-stacks", "set-log-level"} <= set(enabled)
        if how == "ctrl-c":
            assert run.stop() == 130  # Ctrl-C: the shell's code for it, as --help says
        else:
            killed = subprocess.run(
                [sys.executable, "-m", "sparkstorm.cli", "kill", name, "-w", "5"],
                env={**os.environ, **env},
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert killed.returncode == 0, killed.stderr
            assert run.wait() == 0
        said = until(
            lambda: "final figures" in (banner := text_of(browser, "#gone") or "") and banner,
            "the end said",
            20,
        )
        assert text_of(browser, "#status") == "KILLED"
        assert text_of(browser, '#summary td[data-field="Status"]') == "KILLED"
        why = "stopped by Ctrl-C" if how == "ctrl-c" else "killed through its REST API"
        assert why in said, said
        final = json.loads(stats.read_text())["components"]["numbers"]
        assert final["emitted"] > 0
        shown_spout = table(browser, "spouts")["numbers"]
        assert shown_spout["emitted"] == shown(final["emitted"]), (shown_spout, final)
        assert shown_spout["acked"] == shown(final["acked"])
        off = browser.execute_script(
            "return arguments[0].filter((id) => document.getElementById(id).disabled)", CONTROLS
        )
        assert sorted(off) == sorted(CONTROLS)
        for button, ratio in browser.execute_script(CONTRAST, ["kill", "deactivate", "debug"]):
            assert ratio >= 4.5, f"the disabled {button} button: contrast {ratio:.1f}"
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth"
        )
        assert overflow <= 1, f"the page at {width} px scrolls sideways by {overflow}"
    finally:
        if run.process.poll() is None:
            run.kill()
        browser.set_window_size(1400, 1150)


def test_the_page_shows_a_stateful_topologys_checkpoints(browser):
    live = Running("local", None, "web-stateful", make=steady_stateful)
    try:
        browser.get(live.url + "/")
        cell = (By.CSS_SELECTOR, '#summary td[data-field="Checkpoint"]')
        shown_text = until(
            lambda: browser.find_elements(*cell) and browser.find_element(*cell).text, "the row"
        )
        assert " committed, " in shown_text and "rollbacks this run" in shown_text
        committed = live.get("/summary")["topologies"][0]["checkpoints"]["committedTxid"]
        until(
            lambda: int(browser.find_element(*cell).text.split()[0]) >= committed,
            "the page following the API's commits",
        )
    finally:
        live.http.post(f"/api/v1/topology/{live.name}/kill/5")
        live.thread.join(60)


def test_the_page_shows_the_continuous_workers_and_their_checkpoints(browser, spark):
    """Which tasks each worker holds, and its queue; checkpoints taken across workers."""
    live = Running("continuous", spark, "web-workers", make=steady_stateful)
    try:
        live.until(
            lambda: live.get("/summary")["topologies"][0]["checkpoints"]["commits"] > 0, "a commit"
        )
        api = live.get("/web-workers")
        assert [w["worker"] for w in api["workers"]] == [0, 1]  # local[2]: two workers
        held = sorted(task for w in api["workers"] for task in w["tasks"])
        assert len(held) == api["tasksTotal"]  # every task in exactly one worker
        assert all(w["pid"] and w["host"] for w in api["workers"])
        browser.get(live.url + "/")
        until(lambda: len(table(browser, "workers")) == 2, "the two workers")
        workers = table(browser, "workers")
        for worker in api["workers"]:
            assert workers[str(worker["worker"])]["tasks"] == ", ".join(worker["tasks"])
            assert workers[str(worker["worker"])]["pid"] == str(worker["pid"])  # not 29,113
        browser.get(live.url + "/component/count")
        until(lambda: len(table(browser, "tasks")) == 2, "the two tasks of count")
        count = live.get("/web-workers/component/count")
        tasks = table(browser, "tasks")
        for task in count["executorStats"]:
            assert tasks[task["id"]]["worker"] == str(task["worker"])
            assert tasks[task["id"]]["host"] == task["host"] != "-"
        # each worker's uptime, memory and CPU, as Storm UI's supervisor page shows them
        live.until(
            lambda: all(w["cpuPercent"] is not None for w in live.get("/web-workers")["workers"]),
            "the workers' CPU shares",
            timeout=30,
        )
        for worker in live.get("/web-workers")["workers"]:
            assert 10 < worker["memoryMb"] < 10_000 and worker["uptimeSeconds"] > 0
            assert worker["uptimeSecs"] == worker["uptimeSeconds"]  # the 0.4 key, an alias
            assert 0 <= worker["cpuPercent"] <= 100 * os.cpu_count()
        browser.get(live.url + "/")
        until(lambda: len(table(browser, "workers")) == 2, "the two workers")
        for cells in table(browser, "workers").values():
            assert cells["memoryMb"] != "-" and re.fullmatch(r"\dh \d+m \d+s", cells["uptime"])
        labels = browser.execute_script(
            "return [...document.querySelectorAll('#summary th')].map((th) => th.textContent)"
        )
        assert "Worker turns" in labels and "Supersteps" not in labels
        summary = live.get("/summary")["topologies"][0]
        assert summary["mode"] == "continuous" and summary["workersTotal"] == 2
        # Storm's jstack for a worker: through the API, then from the page
        for worker in api["workers"]:
            response = live.http.post(
                f"/api/v1/topology/web-workers/profiling/dumpstack/{worker['worker']}"
            )
            dump = response.json()
            assert response.status_code == 200, dump
            assert (dump["host"], dump["pid"]) == (worker["host"], worker["pid"])
            assert "continuous/worker.py" in dump["stacks"]  # the worker's own loop
        until(
            lambda: len(browser.find_elements(By.CSS_SELECTOR, "#stack-target option")) == 3,
            "3 targets",
        )
        browser.execute_script("document.getElementById('stack-target').value = '1'")
        browser.find_element(By.ID, "dump-stacks").click()
        until(lambda: "continuous/worker.py" in (text_of(browser, "#stacks") or ""), "the dump")
        assert text_of(browser, "#stacks-title").startswith("Stack dump of worker 1 (")
        # Storm's profiler: a CPU profile of worker 0's loop for a second, from the page
        browser.execute_script(
            "document.getElementById('stack-target').value = '0';"
            " document.getElementById('profile-secs').value = '1'"
        )
        browser.find_element(By.ID, "cpu-profile").click()
        until(lambda: "CPU profile of 1 s" in (text_of(browser, "#stacks") or ""), "the profile")
        assert "continuous/worker.py" in text_of(browser, "#stacks")  # its loop's calls
        assert text_of(browser, "#stacks-title").startswith("CPU profile (1 s) of worker 0 (")
        # Storm UI's Debug from a component's page: its acks into the event log, then off
        browser.get(live.url + "/component/count")
        until(lambda: text_of(browser, "#debug") == "Debug", "the Debug button")
        browser.find_element(By.ID, "debug").click()
        answer(browser, "Debug component count", keys="100")
        until(lambda: len(rows(browser, "events")) >= 5, "events in the log")
        assert all(r["line"].startswith("BOLT ack TASK: ") for r in rows(browser, "events"))
        until(lambda: text_of(browser, "#debug") == "Stop debug (100%)", "the button's new role")
        browser.find_element(By.ID, "debug").click()
        answer(browser, "Stop debugging component count?")
        live.until(lambda: not live.get("/web-workers/component/count")["debug"], "debug off")
        # Storm's "Change log level" and logviewer: the count bolt's INFO lines, once asked
        browser.get(live.url + "/")
        until(
            lambda: len(browser.find_elements(By.CSS_SELECTOR, "#stack-target option")) == 3,
            "3 targets",
        )
        before = live.get("/web-workers/workers/0/log")["lines"]
        assert not [line for line in before if "counted" in line["line"]]  # WARNING and up
        browser.execute_script("document.getElementById('logger').value = 'tests.count'")
        browser.find_element(By.ID, "set-log-level").click()
        until(lambda: text_of(browser, "#log-level-said") == "tests.count at INFO for 60 s", "set")
        live.until(  # the driver's loop took it
            lambda: (
                live.get("/web-workers/logconfig")["namedLoggerLevels"]
                .get("tests.count", {})
                .get("target_level")
                == "INFO"
            ),
            "the level shown",
        )
        live.until(  # each worker says it took the level, though its code may log nothing yet
            lambda: all(
                any(
                    "INFO tests.count: log level of tests.count set to INFO for 60 s" in x["line"]
                    for x in live.get(f"/web-workers/workers/{w}/log")["lines"]
                )
                for w in (0, 1)
            ),
            "each worker's record of the level it took",
            30,
        )
        live.until(
            lambda: any(
                "counted" in line["line"]
                for w in (0, 1)
                for line in live.get(f"/web-workers/workers/{w}/log")["lines"]
            ),
            "the bolt's INFO lines in a worker's log",
            30,
        )
        logging_worker = next(
            w
            for w in (0, 1)
            if any(
                "counted" in x["line"] for x in live.get(f"/web-workers/workers/{w}/log")["lines"]
            )
        )
        browser.execute_script(
            f"document.getElementById('stack-target').value = '{logging_worker}'"
        )
        browser.find_element(By.ID, "worker-log").click()
        until(lambda: "INFO tests.count: counted" in (text_of(browser, "#stacks") or ""), "the log")
        # a spout's tasks: Storm's spout executor columns, not a bolt's
        browser.get(live.url + "/component/numbers")
        until(lambda: rows(browser, "tasks"), "the spout's tasks")
        (spout_task,) = rows(browser, "tasks")
        assert "completeLatency" in spout_task and "executed" not in spout_task
        # Storm's rebalance from the page: over one worker, every task on it
        browser.get(live.url + "/")
        button = browser.find_element(By.ID, "rebalance")  # shown once the page knows the slots
        until(lambda: button.is_displayed() and button.is_enabled(), "the Rebalance button")
        button.click()
        answer(browser, "Rebalance topology web-workers over how many workers", keys="1")
        live.until(lambda: len(live.get("/web-workers")["workers"]) == 1, "one worker", 90)
        live.until(lambda: live.get("/web-workers")["status"] == "ACTIVE", "active again", 60)
        (alone,) = live.get("/web-workers")["workers"]
        assert len(alone["tasks"]) == api["tasksTotal"]
    finally:
        live.http.post("/api/v1/topology/web-workers/kill/5")
        live.thread.join(60)


def test_a_trident_topology_shows_its_batches_and_a_wrong_address_says_so(browser):
    from tests.trident.test_drpc_served import word_count_served

    live = Running("local", None, "web-trident", make=word_count_served)
    try:
        browser.get(live.url + "/")
        until(
            lambda: "(12 with tuples" in (text_of(browser, '[data-field="Trident batches"]') or ""),
            "the 12 batches committed, on the page",
        )
        assert text_of(browser, '[data-field="Batch size"]') == "10 tuples"
        latency = text_of(browser, '[data-field="Batch latency"]')
        assert re.fullmatch(r"processing p50 [\d.]+ ms, p99 [\d.]+; commit p50 [\d.]+ ms", latency)
        assert text_of(browser, '[data-field="Replays"]') == "0"
        # at a phone's width every plot fits its box, and follows the window's size; the
        # graph shrinks no further than 0.85 of its size (then its section scrolls), every name
        # inside its node's box
        for width in (390, 1280, 1920):
            browser.set_window_size(width, 844)
            until(lambda: plots_fit(browser), f"plots that fit at {width} px")
            graph = until(lambda: browser.execute_script(GRAPH_FIT), "the graph drawn")
            assert 0.84 <= graph["scale"] <= 1.01, graph  # names stay readable
            assert graph["names"] and not graph["overflowing"], graph
            # every box in sight (a narrow window lays the levels out downward), every
            # summary value whole, the edges labelled with what flows on them
            boxes = browser.execute_script(
                "return [...document.querySelectorAll('#graph .node rect')].map((r) => "
                "r.getBoundingClientRect().right)"
            )
            assert len(boxes) == 6 and max(boxes) <= width, boxes
            cut = browser.execute_script(
                "return [...document.querySelectorAll('#summary td')].filter((td) => "
                "td.scrollWidth > td.clientWidth + 1).map((td) => td.textContent)"
            )
            assert not cut, cut
            labels = browser.execute_script(
                "return [...document.querySelectorAll('#graph .edge-label')].map((t) => "
                "t.textContent)"
            )
            assert "word, count · fields(word)" in labels, labels
            assert not [label for label in labels if re.fullmatch(r"e\d+", label)], labels
            # issue 67, item 6: at 1280 px three labels were piled where three edges met,
            # lines crossing them, and the layout used half the width
            drawn = browser.execute_script(LABELS_CLEAR)
            assert len(drawn["labels"]) == drawn["edges"] == 7, drawn  # every edge labelled
            assert not drawn["clashes"] and drawn["over_lines"], drawn
            assert drawn["right"] <= width, drawn
            if width >= 1280:  # columns wrapped into bands, not a column of rows
                used = browser.execute_script(
                    "return document.getElementById('graph').getBoundingClientRect().width"
                )
                assert used >= 0.8 * min(width, 1400), used
        browser.set_window_size(1400, 1150)
        browser.get(live.url + "/component/nosuch")  # a wrong address: said, not retried
        said = until(lambda: text_of(browser, "#gone"), "the banner")
        assert "has no component 'nosuch'" in said and "does not answer" not in said
    finally:
        live.http.post(f"/api/v1/topology/{live.name}/kill/5")
        live.thread.join(60)
