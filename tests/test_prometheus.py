"""``GET /metrics``: the run's figures as Prometheus scrapes them; ``GET /health``.

The scrape is parsed with prometheus_client's own parser and compared with the REST
API's figures, read when nothing moves (deactivated, drained); the Grafana dashboard in
docs/grafana asks only for series a scrape has.
"""

from __future__ import annotations

import asyncio
import json
import re
import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.cli_topologies import failing, steady
from tests.run_process import ROOT
from tests.test_control import Running


def scrape(live: Running) -> dict[str, dict[tuple, float]]:
    """Each sample's value by name, then by its labels (sorted pairs)."""
    # what Prometheus 2 asks for; the library answers what a scraper's Accept asks
    response = live.http.get("/metrics", headers={"Accept": "text/plain; version=0.0.4"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            labels = tuple(sorted(sample.labels.items()))
            samples.setdefault(sample.name, {})[labels] = sample.value
    return samples


def of(samples, name, **labels):
    return samples[name][tuple(sorted(labels.items()))]


def test_metrics_are_the_apis_figures_by_component_stream_and_task():
    live = Running("local", None, "prom-steady", make=steady)
    try:
        live.until(lambda: live.acked() > 50, "acks")
        health = live.http.get("/health")
        assert health.status_code == 200 and health.json()["status"] == "ACTIVE"
        live.http.post(f"/api/v1/topology/{live.name}/deactivate")
        live.until(lambda: live.get("/summary")["topologies"][0]["inFlight"] == 0, "drained")
        time.sleep(1.2)  # two more snapshots: the counts stand still
        api = live.get(f"/{live.name}")
        samples = scrape(live)
        t = {"topology": live.name}
        (spout,) = api["spouts"]
        assert of(samples, "sparkstorm_ack_count_total", **t, component="numbers") == spout["acked"]
        assert (
            of(samples, "sparkstorm_emit_count_total", **t, component="numbers")
            == (spout["emitted"])
        )
        assert of(samples, "sparkstorm_pending", **t, component="numbers") == 0
        (bolt,) = [b for b in api["bolts"] if b["boltId"] == "ack"]
        executed = of(samples, "sparkstorm_execute_count_total", **t, component="ack")
        assert executed == bolt["executed"] > 0
        by_stream = of(
            samples,
            "sparkstorm_stream_execute_count_total",
            **t,
            component="ack",
            source="numbers",
            stream="default",
        )
        assert by_stream == executed
        tasks = [
            value
            for labels, value in samples["sparkstorm_task_execute_count_total"].items()
            if ("component", "ack") in labels
        ]
        assert len(tasks) == 2 and sum(tasks) == executed  # the bolt's two tasks
        assert of(samples, "sparkstorm_topology_status", **t, status="INACTIVE") == 1
        assert of(samples, "sparkstorm_topology_status", **t, status="ACTIVE") == 0
        assert live.http.get("/health").status_code == 200  # inactive on purpose: healthy
        check_dashboard(samples)
    finally:
        live.http.post(f"/api/v1/topology/{live.name}/kill/0")
        live.thread.join(60)


def test_failures_are_counted_by_reason():
    live = Running("local", None, "prom-failing", make=lambda: (failing(), {}))
    try:
        live.until(lambda: scrape(live).get("sparkstorm_fail_reason_count_total"), "failures")
        reasons = scrape(live)["sparkstorm_fail_reason_count_total"]
        assert sum(reasons.values()) > 0
        assert all(dict(labels)["reason"] for labels in reasons)
    finally:
        live.http.post(f"/api/v1/topology/{live.name}/kill/0")
        live.thread.join(60)


def check_dashboard(samples):
    """Every series the dashboard's queries name is one a scrape has."""
    dashboard = json.loads((ROOT / "docs" / "grafana" / "sparkstorm.json").read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    named = {name for q in queries for name in re.findall(r"\bsparkstorm_[a-z0-9_]+", q)}
    optional = {  # a failing, Trident, Arrow or continuous-mode run's: checked by name below
        "sparkstorm_fail_reason_count_total",
        "sparkstorm_trident_committed_txid",
        "sparkstorm_trident_batch_ms",
        "sparkstorm_rows_per_batch",
        "sparkstorm_worker_memory_mb",
    }
    missing = named - optional - set(samples)
    assert not missing, f"the dashboard asks for series no scrape has: {sorted(missing)}"
    source = (ROOT / "sparkstorm" / "control" / "prometheus.py").read_text()
    for name in optional:
        bare = name.removeprefix("sparkstorm_").removesuffix("_total")
        assert f'"{bare}"' in source or f'"sparkstorm_{bare}"' in source, name


def test_the_health_route_answers_503_once_the_run_ended():
    """A supervisor polling /health sees a halted or killed run as not healthy."""
    from sparkstorm.control.api import build_app
    from sparkstorm.control.api_model import Control, Snapshot

    control = Control(name="ended", engine="local", mode="local", token="t", loopback=True)
    control.snapshot = Snapshot(status="HALTED", ended="TopologyHalted: the ledger is full")

    async def ask():
        transport = httpx.ASGITransport(app=build_app(control))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.get("/health")

    answer = asyncio.run(ask())
    assert answer.status_code == 503
    assert answer.json()["ended"].startswith("TopologyHalted")


def test_a_trident_runs_batches_are_scraped():
    from tests.trident.test_drpc_served import word_count_served

    live = Running("local", None, "prom-trident", make=word_count_served)
    try:
        live.until(
            lambda: (
                (live.get("/summary")["topologies"][0]["trident"] or {}).get("committedBatches", 0)
                >= 12
            ),
            "the 12 batches committed",
        )
        samples = scrape(live)
        batches = live.get("/summary")["topologies"][0]["trident"]
        t = {"topology": live.name}
        assert of(samples, "sparkstorm_trident_batches_committed_total", **t) == 12
        assert of(samples, "sparkstorm_trident_committed_txid", **t) <= batches["committedTxid"]
        assert of(samples, "sparkstorm_trident_batch_ms", **t, phase="processing", quantile="0.99")
    finally:
        live.http.post(f"/api/v1/topology/{live.name}/kill/1")
        live.thread.join(60)
