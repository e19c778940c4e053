"""Every example runs as it is, briefly, on every engine and mode, and does what it says."""

from __future__ import annotations

from collections import Counter

import pytest

from examples import (
    arrow_word_count,
    exclamation,
    join,
    rolling_top_words,
    sliding_window,
    trident_word_count,
    word_count,
)
from sparkstorm import Config
from tests.conftest import run_on


@pytest.fixture(params=["local", "spark", "continuous"])
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


def run_example(engine, spark, topology, conf):
    result = run_on(engine, topology, conf, spark)
    assert result.errors == []
    return result


def test_word_count(engine, request):
    spark = request.getfixturevalue("spark") if engine != "local" else None
    sentences = word_count.SENTENCES * 40
    topology, conf = word_count.build(sentences)
    conf[Config.SPARKSTORM_CAPTURE] = ["count"]
    result = run_example(engine, spark, topology, conf)
    expected = Counter(w for s in sentences for w in s.split())
    final = {}
    for word, count in result.captured[("count", "default")]:
        final[word] = max(count, final.get(word, 0))
    assert final == dict(expected)
    assert result.stats["sentences"]["acked"] == len(sentences)
    assert result.stats["sentences"]["failed"] == 0


def test_arrow_word_count(engine, request):
    """Every sentence one message: each acked once, every word counted."""
    spark = request.getfixturevalue("spark") if engine != "local" else None
    sentences = word_count.SENTENCES * 2000
    topology, conf = arrow_word_count.topology(sentences)
    conf[Config.SPARKSTORM_CAPTURE] = ["count"]
    result = run_example(engine, spark, topology, conf)
    assert result.stats["sentences"]["acked"] == len(sentences)
    assert result.stats["sentences"]["failed"] == 0
    assert result.stats["split"]["executed"] == len(sentences)  # rows, not batches
    final: dict[str, int] = {}
    for word, count in result.captured[("count", "default")]:
        final[word] = max(count, final.get(word, 0))
    assert final == dict(Counter(w for s in sentences for w in s.split()))


@pytest.mark.parametrize("engine", ["local", "continuous"])
def test_trident_word_count(engine, request, capsys):
    """Not on the superstep mode here: a batch takes ~6 supersteps there (a minute for the
    example beside other work); test_integration.py runs the same bolts on it."""
    spark = request.getfixturevalue("spark") if engine != "local" else None
    topology, conf = trident_word_count.topology()
    result = run_example(engine, spark, topology, conf)
    final = {}
    for word, count in result.captured[("counts", "counts")]:
        final[word] = max(count, final.get(word, 0))
    sentences = [trident_word_count.SENTENCES[i % 5] for i in range(20_000)]
    assert final == dict(Counter(w for s in sentences for w in s.split()))
    assert result.stats["trident-coordinator"]["failed"] == 0
    batches = result.stats["trident-coordinator"]["metrics"]["trident"]  # what the UI shows
    assert batches["committedTxid"] == batches["txid"] >= 4  # 20,000 sentences in 5,000s
    assert batches["committedBatches"] == 4 and batches["batchTuples"] == 5000
    assert batches["inFlight"] == 0 and batches["replays"] == 0 and batches["halted"] is None
    assert batches["processingMsP50"] > 0 and batches["commitMsP50"] > 0
    trident_word_count.report(result)
    assert "the 20,000" in capsys.readouterr().out


def test_exclamation(engine, request):
    spark = request.getfixturevalue("spark") if engine != "local" else None
    result = run_example(engine, spark, *exclamation.topology(200))
    words = [v[0] for v in result.captured[("exclaim2", "default")]]
    assert len(words) == 200
    assert all(w.endswith("!!!!!!") and w[:-6] in exclamation.WORDS for w in words)
    assert (result.stats["word"]["acked"], result.stats["word"]["failed"]) == (200, 0)


def test_rolling_top_words_acks_buffered_tuples_on_ticks(engine, request):
    spark = request.getfixturevalue("spark") if engine != "local" else None
    result = run_example(engine, spark, *rolling_top_words.topology(1000))
    assert (result.stats["words"]["acked"], result.stats["words"]["failed"]) == (1000, 0)
    assert result.stats["counter"]["executed"] > 1000  # the words, plus tick tuples
    latest = result.captured[("rankings", "default")][-1][0]
    assert latest[0][0] == "word0"  # the most frequent word of the skewed stream


def test_join_anchors_to_both_inputs(engine, request):
    spark = request.getfixturevalue("spark") if engine != "local" else None
    result = run_example(engine, spark, *join.topology(50))
    joined = sorted(result.captured[("join", "default")])
    assert joined == [[i, ["male", "female"][i % 2], 18 + i % 42] for i in range(50)]
    for spout in ("gender", "age"):
        assert (result.stats[spout]["acked"], result.stats[spout]["failed"]) == (50, 0)


def test_sliding_window_sums_and_averages(engine, request):
    spark = request.getfixturevalue("spark") if engine != "local" else None
    topology, conf = sliding_window.topology()
    result = run_on(engine, topology, conf, spark, duration=3)
    sums = [v[0] for v in result.captured[("slidingsum", "default")]]
    averages = [v[0] for v in result.captured[("tumblingavg", "default")]]
    assert len(averages) >= 5, "a few windows in 3 s"
    stream = sliding_window.integers()
    values = [next(stream) for _ in range(10 * len(sums))]
    # one task each: the windows in order, every 10 integers, over the last 30
    ends = range(10, 10 * len(sums) + 1, 10)
    assert sums == [sum(values[max(0, end - 30) : end]) for end in ends]
    assert averages == [sum(sums[i : i + 3]) / 3 for i in range(0, 3 * len(averages), 3)]
    spout = result.stats["integers"]
    # all but what windows still held at the stop: 20 integers for the next sliding window,
    # and up to 2 sums in the tumbling window, anchored to up to 40 integers
    assert spout["acked"] >= 10 * len(sums) - 60
    assert set(spout["fail_reasons"]) <= {"shutdown"}
