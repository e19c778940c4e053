from __future__ import annotations

import pytest

from examples.word_count import build, generated_sentences
from sparkstorm import Config, run
from sparkstorm.control.batch_sizing import MAX_GROWTH, MAX_SHRINK, START_BATCH, SpoutBatchSizer


def test_grows_while_saturated_supersteps_are_short() -> None:
    sizer = SpoutBatchSizer(target_secs=1.0)
    sizer.observe(START_BATCH, saturated=True, took_secs=0.5)
    assert sizer.batch == START_BATCH * 2
    sizer.observe(START_BATCH, saturated=True, took_secs=0.8)  # the same load, longer
    assert sizer.batch == round(START_BATCH * 1.25)
    sizer.observe(START_BATCH, saturated=True, took_secs=0.01)  # 100x: one noisy step
    assert sizer.batch == START_BATCH * MAX_GROWTH


def test_does_not_grow_when_the_spouts_had_less_to_give() -> None:
    sizer = SpoutBatchSizer(target_secs=1.0)
    sizer.observe(sizer.batch, saturated=False, took_secs=0.1)
    assert sizer.batch == START_BATCH


def test_shrinks_long_supersteps_saturated_or_not() -> None:
    sizer = SpoutBatchSizer(target_secs=1.0)
    sizer.observe(1000, saturated=False, took_secs=1.25)
    assert sizer.batch == 800
    sizer.observe(1000, saturated=True, took_secs=10.0)
    assert sizer.batch == 1000 / MAX_SHRINK


def test_scales_the_batches_the_superstep_carried_not_the_current_one() -> None:
    sizer = SpoutBatchSizer(target_secs=1.0)
    sizer.observe(100, saturated=True, took_secs=0.5)  # pipelined: learned one step late
    assert sizer.batch == 200
    sizer.observe(300, saturated=True, took_secs=1.0)  # it also carried the 100 before
    assert sizer.batch == 200


def test_converges_on_a_superstep_with_a_fixed_cost() -> None:
    sizer = SpoutBatchSizer(target_secs=1.0)
    seen = []
    for _ in range(40):  # 0.25 s per job plus 50 us per call
        sizer.observe(sizer.batch, saturated=True, took_secs=0.25 + 50e-6 * sizer.batch)
        seen.append(sizer.batch)
    assert sizer.batch == pytest.approx(15_000, rel=0.02)
    assert max(seen) <= 15_000 * 1.01  # from below: no superstep beyond the target
    assert all(b == pytest.approx(15_000, rel=0.05) for b in seen[10:])  # settled by then


def test_settles_when_a_superstep_also_carries_the_batch_before_it() -> None:
    # pipelined word count: a superstep splits its batch and counts the one before (8x
    # the tuples), and its result is observed after the next superstep was launched
    sizer, launched, took = SpoutBatchSizer(target_secs=1.0), [], []
    for n in range(30):
        launched.append(sizer.batch)
        if n >= 1:
            before = launched[n - 2] if n >= 2 else 0
            took.append(0.22 + 5e-6 * launched[n - 1] + 25e-6 * before)
            sizer.observe(launched[n - 1], saturated=True, took_secs=took[-1])
    assert all(0.9 <= secs <= 1.1 for secs in took[-15:])  # no large/small alternation


def test_fixed_batch_and_max_spout_pending_bound_it() -> None:
    fixed = SpoutBatchSizer(target_secs=1.0, fixed=250)
    fixed.observe(250, saturated=True, took_secs=0.01)
    assert fixed.batch == 250
    bounded = SpoutBatchSizer(target_secs=1.0, max_pending=100)
    for _ in range(5):
        bounded.observe(bounded.batch, saturated=True, took_secs=0.01)
    assert bounded.batch == 100


def test_a_run_reports_its_adapted_batch_and_a_set_batch_stays() -> None:
    topology, conf = build(generated_sentences(3000), parallelism=1)
    conf[Config.SPARKSTORM_SUPERSTEP_TARGET_SECS] = 10.0  # every superstep is short
    adapted = run(topology, conf, engine="local").stats["sentences"]
    assert adapted["acked"] == 3000
    assert adapted["spout_batch"] > START_BATCH
    conf[Config.SPARKSTORM_SPOUT_BATCH] = 7
    fixed = run(topology, conf, engine="local")
    assert fixed.stats["sentences"]["spout_batch"] == 7
    assert fixed.supersteps >= 3000 // 7
