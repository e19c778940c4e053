"""An Arrow bolt's mistakes are said, naming the bolt and the fix; its figures are rows.

Settling a row twice (``ack_batch`` twice, or after ``fail_rows``), an anchor outside
the input batch and a null in a mask are each an error naming the bolt; the rows the
error leaves unsettled fail at once with reason ``error`` instead of timing out later.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from sparkstorm import Fields, TopologyBuilder, run
from sparkstorm.arrow import ArrowBolt
from tests.arrow.components import SentenceBatches, noted

SENTENCES = [f"s{i}" for i in range(8)]


class Mistaken(ArrowBolt):
    """Echoes its batch anchored row for row, then makes ``mistake`` on the first batch."""

    def __init__(self, mistake: str) -> None:
        self.mistake = mistake

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.made = False

    def execute_batch(self, batch):
        first, self.made = not self.made, True
        rows = pa.array(range(batch.num_rows), pa.int64())
        mistake = self.mistake if first else "none"
        if mistake == "anchor out of range":
            rows = pc.add(rows, 1)
        self.collector.emit_batch(batch, anchors=rows)
        if mistake == "ack_batch twice":
            self.collector.ack_batch(batch)
        elif mistake == "ack_batch after fail_rows":
            self.collector.fail_rows([True] + [False] * (batch.num_rows - 1), "bad")
        elif mistake == "null in mask":
            self.collector.ack_rows(pa.array([None] + [True] * (batch.num_rows - 1)))
            return
        self.collector.ack_batch(batch)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("sentence"))


def _run(mistake: str, folder: str):
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceBatches(SENTENCES, 4, folder))
    builder.set_bolt("echo", Mistaken(mistake)).shuffle_grouping("sentences")
    conf = {"topology.message.timeout.secs": 30}  # before its fix, a null row waited for it
    return run(builder.create_topology(), conf, engine="local", until_idle=True)


@pytest.mark.parametrize(
    ("mistake", "said"),
    [
        (
            "ack_batch twice",
            "bolt 'echo' ack_batch: rows [0, 1, 2, 3] of the batch were acked or failed "
            "already: settle each row once",
        ),
        (
            "ack_batch after fail_rows",
            "bolt 'echo' ack_batch: rows [0] of the batch were acked or failed already: "
            "ack the rows left with ack_rows(mask)",
        ),
        ("null in mask", "bolt 'echo' gave ack_rows a mask with 1 null(s)"),
        (
            "anchor out of range",
            "component 'echo' emitted on stream 'default' a row 3 anchored to input row 4, "
            "but the input batch has 4 rows: give an index in 0..3 (or -1 for no anchor)",
        ),
    ],
)
def test_a_mistake_is_said_and_its_rows_fail_at_once(mistake, said, tmp_path):
    result = _run(mistake, str(tmp_path))
    errors = [e.message for e in result.errors]
    assert any(said in e for e in errors), errors
    reasons = sorted(line.split(" ")[1] for line in noted(str(tmp_path), "failed"))
    # no row waits for its timeout: each one the mistake left unsettled fails with it
    expected = {
        "ack_batch twice": [],  # every row was acked by the first ack_batch
        "ack_batch after fail_rows": ["explicit"] + ["error"] * 3,
        "null in mask": ["error"] * 4,
        "anchor out of range": ["error"] * 4,
    }[mistake]
    assert reasons == sorted(expected)
    acked = sorted(int(line) for line in noted(str(tmp_path), "acked"))
    assert len(set(acked)) == len(SENTENCES)  # every message acked in the end
    if mistake == "anchor out of range":  # the rows that never left are not counted
        assert result.stats["echo"]["emitted"] == len(SENTENCES) + len(reasons) - 4


def test_an_arrow_bolt_shows_its_process_latency_and_batches_out(tmp_path):
    """Process ms is receipt to ack, per row; a bolt's batches out are its emits, and a
    spout's are its ``emit_batch`` calls, not the pieces a shuffle deals them into."""
    from sparkstorm.control.api_views import batch_sizes

    builder = TopologyBuilder()
    sentences = [f"s{i}" for i in range(400)]
    builder.set_spout("sentences", SentenceBatches(sentences, 200, str(tmp_path)))
    builder.set_bolt("echo", _Slow(), 2).shuffle_grouping("sentences")
    result = run(builder.create_topology(), {}, engine="local", until_idle=True)
    spout, echo = result.stats["sentences"], result.stats["echo"]
    assert batch_sizes(spout)["rowsPerBatchEmitted"] == 200.0
    assert batch_sizes(echo)["rowsPerBatchEmitted"] == batch_sizes(echo)["rowsPerBatchExecuted"]
    assert echo["batches_out"] == echo["batches_in"] >= 2
    assert echo["process_latency_ms"] >= 5  # each batch took 5 ms between receipt and ack


class _Slow(ArrowBolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute_batch(self, batch):
        import time

        time.sleep(0.005)
        self.collector.emit_batch(batch, anchors=pa.array(range(batch.num_rows), pa.int64()))
        self.collector.ack_batch(batch)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("sentence"))
