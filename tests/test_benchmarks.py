"""The benchmark command's parts run and report every configuration (tiny sizes)."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from benchmarks import acker, cpu_budget, latency, local_hops, report, scaling, wordcount
from benchmarks import kafka as kafka_benchmark
from benchmarks.api_floor import api_floor
from examples.word_count import generated_sentences


@pytest.mark.spark
def test_scaling_sweep_reports_every_configuration_and_plots(spark, tmp_path):
    lines, points = scaling.measure(spark, [300, 600])
    labels = {label for label, _, _ in scaling.configurations()}
    labels |= {"plain PySpark", "PySpark, JVM count"}
    assert set(points) == labels
    for series in points.values():
        assert [size for size, _ in series] == [300, 600]
        assert all(tps > 0 for _, tps in series)
    rows = [line for line in lines if "acking on, 4 tasks/bolt" in line]
    assert len(rows) == 2 and all("%" in row for row in rows)  # the profile breakdown
    scaling.plot(points, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.spark
def test_word_count_table_has_structured_streaming_beside_every_configuration(spark):
    lines = wordcount.compare(spark, generated_sentences(2500), rounds=1, session_secs=0.0)
    rows = {line[:22].strip(): line for line in lines}
    for label in ("spark acking on", "local acking on", "Structured Streaming", "plain PySpark"):
        assert label in rows
    ss_ratio = float(rows["Structured Streaming"].split()[-4])  # its own "x SS" column
    assert ss_ratio == 1.0
    floor_tps = float(rows["API floor, 1 core"][22:].split()[0].replace(",", ""))
    local_tps = float(rows["local acking on"][22:].split()[0].replace(",", ""))
    # both measured (which is faster is the benchmark's to say: timing under a test's load
    # is noise; it failed once beside a parallel test run)
    assert floor_tps > 0 and local_tps > 0
    spent, allowed, used = (line for line in lines if line.startswith("  "))
    assert "API floor" in spent and "2x SS" in allowed and "1.5x local" in allowed
    figures = dict(re.findall(r"(\w+ acking o\w+) (\d+\.\d+)", used))
    assert set(figures) == {"local acking on", "continuous acking on", "continuous acking off"}
    assert all(float(us) > 0 for us in figures.values()), used


def test_api_floor_runs_the_examples_bolts_on_every_word():
    sentences = generated_sentences(200)
    assert api_floor(sentences)["tps"] > 0  # it asserts itself that every word was counted


@pytest.mark.spark
def test_local_hops_table_has_a_row_per_run_for_each_setting(spark):
    lines = local_hops.compare(spark, generated_sentences(1000), rounds=1)
    rows = [[cell.strip() for cell in line.split("|")] for line in lines[1:]]
    assert lines[0] == local_hops.HEADER
    assert [row[0] for row in rows] == ["0", "16"]
    assert all(float(row[1].replace(",", "")) > 0 and int(row[2]) > 0 for row in rows)


@pytest.mark.spark
def test_latency_run_reports_each_engine_and_rate_and_plots(spark, tmp_path):
    lines, runs = latency.measure(spark, [18_000, 36_000], secs=1.0)
    rows = [line.split() for line in lines if line.startswith(("spark ", "continuous ", "local "))]
    assert [(row[0], row[1]) for row in rows] == [
        ("spark", "18,000"),
        ("continuous", "18,000"),
        ("local", "18,000"),
        ("spark", "36,000"),
        ("continuous", "36,000"),
        ("local", "36,000"),
    ]
    for run in runs["spark"] + runs["continuous"] + runs["local"]:
        assert run["failed"] == 0
        assert 0 < run["p50"] <= run["p99"]
        # ~1 s offered at the rate, then drained: never more than offered. How much of it
        # was achieved is the benchmark's figure, not a test's: run alone, first in a
        # cold Spark session, the superstep mode's first rate reached 0.28x, failing a
        # 0.3x bound that passed inside the suite (a warm session)
        assert 0 < run["tps"] < 1.2 * run["offered"]
    assert all(run["prepares"] == 1 for run in runs["local"])  # one process: once per task
    assert all(run["prepares"] == 1 for run in runs["continuous"])  # a task stays in a worker
    assert all(run["prepares"] >= 1 for run in runs["spark"])  # once per task per worker
    latency.plot(runs, tmp_path / "latency.png")
    assert (tmp_path / "latency.png").read_bytes()[:4] == b"\x89PNG"


def test_results_section_is_replaced_and_the_rest_kept(tmp_path, monkeypatch):
    page = tmp_path / "benchmarks.md"
    page.write_text(f"# Title\nintro\n{report.BEGIN}\nold table\n{report.END}\noutro\n")
    monkeypatch.setattr(report, "PAGE", page)
    report.write_results_section({"acker": ["new line 1", "new line 2"]})
    text = page.read_text()
    assert "old table" not in text
    assert text.startswith("# Title\nintro\n") and text.endswith("outro\n")
    assert "new line 1\nnew line 2" in text and text.count(report.BEGIN) == 1


def test_cpu_budget_counts_the_children_apart_from_the_driver():
    """A child that spins for 0.5 s shows in the workers' CPU, not in the driver's."""
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass\n"
    before = cpu_budget.cpu_secs()
    child = subprocess.Popen([sys.executable, "-c", spin + "time.sleep(30)"])
    try:
        time.sleep(0.2)
        deadline = time.monotonic() + 10
        while cpu_budget.cpu_secs()["workers"] - before["workers"] < 0.45:
            assert time.monotonic() < deadline, "the child's CPU never showed"
            time.sleep(0.1)
        assert cpu_budget.cpu_secs()["driver"] - before["driver"] < 0.45
    finally:
        child.kill()
        child.wait()


def test_cpu_used_does_not_count_a_process_that_left_the_tree_as_negative_time():
    """The cause of a failed word-count table check: a Python worker re-parented to init
    took its whole past CPU out of the 'after' sum, and local acking on came out negative."""
    before = {1: ("driver", 1.0), 2: ("workers", 5.0), 3: ("jvm", 2.0)}
    after = {1: ("driver", 1.5), 3: ("jvm", 2.25), 4: ("workers", 0.5)}
    assert cpu_budget.cpu_used(before, after) == {"driver": 0.5, "jvm": 0.25, "workers": 0.5}


def test_the_streamparse_layer_benchmark_runs_both_ways_with_every_word_acked():
    from benchmarks.streamparse_layer import one_run

    for kind in ("native", "streamparse"):
        assert one_run(kind, 400) > 0  # it asserts that all 400 words were acked


def test_soak_memory_flatness_reads_from_minute_five_against_plus_minus_ten_percent():
    from benchmarks.soak import SERIES, flatness

    def at(minute: float, workers: float) -> tuple[float, dict[str, float]]:
        return minute * 60, {**dict.fromkeys(SERIES, 100.0), "workers": workers}

    samples = [at(1, 10.0), at(5, 200.0), at(10, 190.0), at(20, 230.0), at(30, 200.0)]
    rows = {line[:14].strip(): line[14:].split() for line in flatness(samples)[1:]}
    assert rows["driver JVM"] == ["100", "+0.0%", "+0.0%", "+0", "yes"]
    assert rows["workers"][:3] == ["200", "-5.0%", "+15.0%"]  # minute 1 is warm-up
    assert rows["workers"][-1] == "NO"


@pytest.mark.services
def test_kafka_rows_count_every_sentence_and_a_stuck_record_is_bounded(kafka):
    bench, sentences = kafka_benchmark, generated_sentences(300)
    topic, out = kafka.topic(bench.PARTITIONS), kafka.topic(bench.PARTITIONS)
    bench.example.publish(kafka.bootstrap, topic, sentences)
    bare = bench.bare_loop(kafka, topic, out, len(sentences))
    assert bare.steady > 0 and bare.whole > 0 and bare.cpu_secs > 0
    topic, out = kafka.topic(bench.PARTITIONS), kafka.topic(bench.PARTITIONS)
    bench.example.publish(kafka.bootstrap, topic, sentences)
    floor = bench.api_floor(kafka, topic, out, len(sentences))  # it meters every count written
    assert floor.steady > 0 and floor.cpu_secs > 0
    row = bench.topology_run(kafka, "local", None, sentences)  # it asserts the acks
    assert row.steady > 0 and row.lag_secs >= 0 and row.cpu_secs > 0  # the broker's left out
    columns = bench.topology_run(kafka, "local", None, sentences, columns=True)
    assert columns.steady > 0 and columns.unwritten == 0
    assert bench.first_write_secs(kafka, idempotent=False) > 0
    samples, spout = bench.stuck_rss(kafka, 4.0)
    assert samples and all(mb > 0 for _, mb in samples)
    assert spout["failed"] >= 1 and spout["acked"] <= 20_000  # the pause's bound


def test_the_tuple_api_rows_count_every_tuple_and_settle_every_tree():
    from benchmarks.tuple_api import inline_acking, plain_loop, sparkstorm_run
    from examples.word_count import generated_sentences

    sentences = generated_sentences(500)
    assert plain_loop(sentences)["whole"] > 0
    assert inline_acking(sentences)["whole"] > 0  # asserts every tree came back to zero
    local = sparkstorm_run(sentences, "local", None)  # asserts every sentence acked
    assert local["whole"] >= local["elapsed"] > 0


def test_the_arrow_rows_time_the_whole_job_in_parts_with_either_spout():
    from benchmarks.arrow_side import SentenceList, engine_row
    from examples.word_count import generated_sentences

    sentences = generated_sentences(3_000)
    for spout in (None, SentenceList):
        run = engine_row("local", spout=spout)(None, sentences)  # asserts every one acked
        parts = run["built"] + run["startup"] + run["elapsed"] + run["after"]
        assert run["whole"] == pytest.approx(9 * len(sentences) / parts)
        assert run["tps"] > run["whole"] > 0 and run["after"] > 0


@pytest.mark.parametrize("consecutive", [False, True])
def test_the_acker_stream_benchmark_completes_every_tree_of_the_word_count(consecutive):
    """Its messages are the word count's: every tree's acks XOR back to zero."""
    assert acker.stream_rate(2 * acker.ARROW_BATCH, consecutive) > 0
