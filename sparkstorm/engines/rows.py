"""The wire format between supersteps: Arrow rows that are envelopes of tuples.

One row carries every tuple one source sent to one destination task in one superstep,
pickled in emission order (Storm's FIFO per sender and receiver), so Spark moves a few
rows per task pair instead of one per tuple. Inside, consecutive tuples of the same
source task and stream form a run ``(source task, stream, [values], [roots])``, so the
receiver looks up component and fields once per run, not once per tuple. ``ord`` orders
a task's envelopes: tuples emitted by tasks (by source task id) come before the driver's
new tick and spout rows, which is also the local engine's delivery order.

Columns: ``task`` (destination), ``part`` (Spark partition: tasks are dealt round-robin
over as many partitions as the engine uses), ``ord``, ``kind`` (see the ``KIND_``
constants), ``count`` (tuples in the envelope) and ``payload``.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from sparkstorm.errors import InvalidTopologyError
from sparkstorm.topology.fields import Fields
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.row_batch import RowBatch
from sparkstorm.topology.streams import (
    ACKER_COMPONENT_ID,
    CHECKPOINT_FIELDS,
    CHECKPOINT_STREAM_ID,
    FIELDS_BY_STREAM,
    RESULT_FIELDS,
    SYSTEM_COMPONENT_ID,
    SYSTEM_STREAM_FIELDS,
    SYSTEM_STREAM_ID,
    SYSTEM_TASK_ID,
    TICK_STREAM_ID,
)
from sparkstorm.topology.tuple import TICK_FIELDS, Row, Tuple

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

BATCH = ("batch",)
"""The stream slot of a run that is one record batch (a :class:`RowBatch`, pickled whole)."""

DRIVER_ORD = 1 << 40
SPARK_SCHEMA = "task int, part int, ord long, kind byte, count int, payload binary"
ARROW_SCHEMA = pa.schema(
    [
        ("task", pa.int32()),
        ("part", pa.int32()),
        ("ord", pa.int64()),
        ("kind", pa.int8()),
        ("count", pa.int32()),
        ("payload", pa.binary()),
    ]
)

_Run = tuple[int, Any, Any, list[Any]]
"""(source task, stream, [values], [roots]); a record batch is (source task, BATCH, None,
[the RowBatch])."""

_SYSTEM_FIELDS = {
    **FIELDS_BY_STREAM,
    TICK_STREAM_ID: TICK_FIELDS,
    CHECKPOINT_STREAM_ID: CHECKPOINT_FIELDS,
    SYSTEM_STREAM_ID: SYSTEM_STREAM_FIELDS,
}


class RowCodec:
    """Turns tuples into envelope rows and back, for one topology's plan."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self._fields: dict[tuple[str, str], Fields] = {
            (cid, sid): info.fields
            for cid, spec in plan.components.items()
            for sid, info in spec.streams.items()
        }

    def component_of(self, task: int) -> str:
        """The component of a source task id (``__system`` for ticks)."""
        return SYSTEM_COMPONENT_ID if task == SYSTEM_TASK_ID else self.plan.task_component[task]

    def fields_of(self, component: str, stream: str) -> Fields:
        """The declared fields of a stream, system streams included."""
        if component == ACKER_COMPONENT_ID:
            return RESULT_FIELDS
        return self._fields.get((component, stream)) or _SYSTEM_FIELDS[stream]

    def envelopes(
        self, rows: Iterable[Row], ord_: int, kind: int, columns: dict[str, list[Any]]
    ) -> int:
        """Append one envelope row per destination task of ``rows`` to ``columns``."""
        runs, counts = self.runs(rows)
        for task, task_runs in runs.items():
            append_row(
                columns,
                task,
                self.plan.worker_of.get(task, 0),
                ord_,
                kind,
                counts[task],
                self.pickled(task_runs),
            )
        return sum(counts.values())

    def pickled(self, task_runs: list[_Run]) -> bytes:
        """One task's runs as bytes; a value that cannot be pickled is named in the error."""
        try:
            return pickle.dumps(task_runs, protocol=5)
        except Exception as exc:
            raise self._unserializable(task_runs, exc) from exc

    def frame(self, runs: dict[int, list[_Run]]) -> bytes:
        """Several tasks' runs as one message (the continuous mode's frame), named errors."""
        try:
            return pickle.dumps(list(runs.items()), protocol=5)
        except Exception:
            for task_runs in runs.values():
                self.pickled(task_runs)  # raises, naming the component, stream and field
            raise

    def runs(self, rows: Iterable[Row]) -> tuple[dict[int, list[_Run]], dict[int, int]]:
        """``rows`` grouped by destination task as runs, in emission order; tuples per task."""
        runs: dict[int, list[_Run]] = {}
        counts: dict[int, int] = {}
        for task, tup in rows:
            task_runs = runs.get(task)
            if task_runs is None:
                task_runs = runs[task] = []
                counts[task] = 0
            counts[task] += 1
            run = task_runs[-1] if task_runs else None
            if type(tup) is RowBatch:  # travels whole: its record batch and its rows' trees
                # its stream slot is no stream name, so the next tuple starts a new run
                task_runs.append((tup.source_task, BATCH, None, [tup]))
                continue
            if run is None or run[0] != tup.source_task or run[1] != tup.source_stream:
                task_runs.append(
                    (tup.source_task, tup.source_stream, [tup.values], [tup.anchors_to_ids])
                )
            else:
                run[2].append(tup.values)
                run[3].append(tup.anchors_to_ids)
        return runs, counts

    def _unserializable(self, task_runs: list[_Run], exc: Exception) -> InvalidTopologyError:
        """An error naming the component, stream and field whose value cannot be pickled."""
        for src_task, stream, values_list, _ in task_runs:
            if values_list is None:  # a record batch: Arrow buffers always pickle
                continue
            component = self.component_of(src_task)
            fields = self.fields_of(component, stream)
            for values in values_list:
                for i, value in enumerate(values):
                    try:
                        pickle.dumps(value, protocol=5)
                    except Exception as err:
                        name = fields[i] if i < len(fields) else str(i)
                        msg = (
                            f"component {component!r} emitted a value that cannot be "
                            f"serialized on stream {stream!r}, field {name!r}: "
                            f"{type(value).__name__} ({err}); emit plain data (str, int, "
                            f"float, bytes, lists, dicts) and keep clients inside the bolt"
                        )
                        return InvalidTopologyError(
                            msg, component=component, stream=stream, field=name
                        )
        msg = f"tuples could not be serialized: {exc}"
        return InvalidTopologyError(msg)

    def tuples(self, payload: bytes) -> list[Tuple]:
        """The tuples of one envelope, in emission order."""
        return self.tuples_of_runs(pickle.loads(payload))

    def tuples_of_runs(self, task_runs: list[_Run]) -> list[Tuple]:
        """The tuples of one task's runs, in emission order."""
        out: list[Tuple] = []
        for src_task, stream, values_list, roots_list in task_runs:
            if values_list is None:  # a record batch (see ``runs``)
                out.extend(roots_list)
                continue
            component = self.component_of(src_task)
            fields = self.fields_of(component, stream)
            out.extend(
                [
                    Tuple(values, fields, component, stream, src_task, roots)
                    for values, roots in zip(values_list, roots_list, strict=True)
                ]
            )
        return out


def extra_rows(task_runs: list[_Run]) -> int:
    """Rows the record batches of one task's runs hold beyond one each (a backlog's)."""
    return sum(
        batch.num_rows - 1
        for _, _, values_list, batches in task_runs
        if values_list is None
        for batch in batches
    )


def new_columns() -> dict[str, list[Any]]:
    """Empty column lists in :data:`ARROW_SCHEMA` order."""
    return {name: [] for name in ARROW_SCHEMA.names}


def append_row(
    columns: dict[str, list[Any]],
    task: int,
    part: int,
    ord_: int,
    kind: int,
    count: int,
    payload: bytes,
) -> None:
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
