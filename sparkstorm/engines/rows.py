"""The wire format between supersteps: Arrow rows that are envelopes of tuples.

One row carries every tuple one source sent to one destination task in one superstep,
pickled in emission order (Storm's FIFO per sender and receiver), so Spark moves a few
rows per task pair instead of one per tuple. ``ord`` orders a task's envelopes: tuples
emitted by tasks (by source task id) come before the driver's new tick and spout rows,
which is also the local engine's delivery order.

Columns: ``task`` (destination), ``part`` (Spark partition = the destination's dense
index), ``ord``, ``kind`` (see the ``KIND_`` constants), ``count`` (tuples in the
envelope) and ``payload``.
"""

from __future__ import annotations

import pickle
from typing import Any

import pyarrow as pa

from sparkstorm.reliability.collectors import Row
from sparkstorm.reliability.streams import (
    ACK_FIELDS,
    ACKER_ACK_STREAM_ID,
    ACKER_COMPONENT_ID,
    ACKER_FAIL_STREAM_ID,
    ACKER_INIT_STREAM_ID,
    ACKER_RESET_TIMEOUT_STREAM_ID,
    FAIL_FIELDS,
    INIT_FIELDS,
    RESET_FIELDS,
    RESULT_FIELDS,
)
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.tuple import (
    SYSTEM_COMPONENT_ID,
    SYSTEM_TASK_ID,
    TICK_FIELDS,
    TICK_STREAM_ID,
    Tuple,
)

KIND_TUPLES = 0
"""Tuples for a bolt or acker task: stays in Spark."""
KIND_STATE = 1
"""A task's state snapshot; ``ord`` holds the superstep it was taken in."""
KIND_OUTCOMES = 2
"""The acker's outcomes for spout tasks: collected to the driver."""
KIND_META = 3
"""A partition's statistics, errors and captured values: collected to the driver."""
KIND_CLEANUP = 4
"""Control row asking a task to call ``cleanup``."""

DRIVER_ORD = 1 << 40
SPARK_SCHEMA = "task int, part int, ord long, kind byte, count int, payload binary"
ARROW_SCHEMA = pa.schema([("task", pa.int32()), ("part", pa.int32()), ("ord", pa.int64()),
                          ("kind", pa.int8()), ("count", pa.int32()), ("payload", pa.binary())])

_SYSTEM_FIELDS = {
    ACKER_INIT_STREAM_ID: INIT_FIELDS,
    ACKER_ACK_STREAM_ID: ACK_FIELDS,
    ACKER_FAIL_STREAM_ID: FAIL_FIELDS,
    ACKER_RESET_TIMEOUT_STREAM_ID: RESET_FIELDS,
    TICK_STREAM_ID: TICK_FIELDS,
}


class RowCodec:
    """Turns tuples into envelope rows and back, for one topology's plan."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        executor_tasks = sorted(plan.acker_tasks + plan.bolt_tasks)
        self.part_of = {task: i for i, task in enumerate(executor_tasks)}
        self.num_parts = max(1, len(executor_tasks))
        self._fields: dict[tuple[str, str], Fields] = {
            (cid, sid): info.fields
            for cid, spec in plan.components.items() for sid, info in spec.streams.items()}

    def component_of(self, task: int) -> str:
        """The component of a source task id (``__system`` for ticks)."""
        return SYSTEM_COMPONENT_ID if task == SYSTEM_TASK_ID else self.plan.task_component[task]

    def fields_of(self, component: str, stream: str) -> Fields:
        """The declared fields of a stream, system streams included."""
        if component == ACKER_COMPONENT_ID:
            return RESULT_FIELDS
        return self._fields.get((component, stream)) or _SYSTEM_FIELDS[stream]

    def envelopes(self, rows: list[Row], ord_: int, kind: int,
                  columns: dict[str, list[Any]]) -> int:
        """Append one envelope row per destination task of ``rows`` to ``columns``."""
        by_task: dict[int, list[tuple[int, str, list[Any], dict[int, int] | None]]] = {}
        for task, tup in rows:
            entry = (tup.source_task, tup.source_stream, tup.values, tup._roots)
            bucket = by_task.get(task)
            if bucket is None:
                by_task[task] = [entry]
            else:
                bucket.append(entry)
        for task, entries in by_task.items():
            append_row(columns, task, self.part_of.get(task, 0), ord_, kind, len(entries),
                       pickle.dumps(entries, protocol=5))
        return len(rows)

    def tuples(self, payload: bytes) -> list[Tuple]:
        """The tuples of one envelope, in emission order."""
        out = []
        component_of, fields_of = self.component_of, self.fields_of
        for src_task, stream, values, roots in pickle.loads(payload):
            component = component_of(src_task)
            out.append(Tuple(values, fields_of(component, stream), component, stream, src_task,
                             roots))
        return out


def new_columns() -> dict[str, list[Any]]:
    """Empty column lists in :data:`ARROW_SCHEMA` order."""
    return {name: [] for name in ARROW_SCHEMA.names}


def append_row(columns: dict[str, list[Any]], task: int, part: int, ord_: int, kind: int,
               count: int, payload: bytes) -> None:
    """Append one row to ``columns``."""
    columns["task"].append(task)
    columns["part"].append(part)
    columns["ord"].append(ord_)
    columns["kind"].append(kind)
    columns["count"].append(count)
    columns["payload"].append(payload)


def to_batch(columns: dict[str, list[Any]]) -> pa.RecordBatch:
    """The columns as one Arrow record batch."""
    return pa.RecordBatch.from_pydict(columns, schema=ARROW_SCHEMA)
