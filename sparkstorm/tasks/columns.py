"""Record batches meet tuples: what a task receives, as its component takes it.

A plain bolt fed by an Arrow stream gets one ``Tuple`` a row, each in its own trees; an
``ArrowBolt`` fed by a tuple stream gets each run of consecutive tuples of one stream
as one record batch (ticks stay tuples). Only tasks with such a mixed input pay for it.
"""

from __future__ import annotations

from typing import Any

from sparkstorm.topology.columnar import is_columnar
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.row_batch import RowBatch, rows_as_tuples, tuples_as_batch
from sparkstorm.topology.streams import SYSTEM_COMPONENT_ID
from sparkstorm.topology.tuple import Tuple


def fed_batches(plan: Plan, component: str) -> bool:
    """Whether a component upstream of ``component`` emits record batches."""
    spec = plan.components.get(component)
    if spec is None:
        return False
    return any(
        is_columnar(plan.components[source.component_id].obj)
        for source, _ in spec.inputs
        if source.component_id in plan.components
    )


def as_tuples(received: list[Tuple]) -> list[Tuple]:
    """``received`` with every record batch as its rows' tuples, in order."""
    out: list[Tuple] = []
    for tup in received:
        if type(tup) is RowBatch:
            out.extend(rows_as_tuples(tup))
        else:
            out.append(tup)
    return out


def as_batches(received: list[Tuple]) -> list[Any]:
    """``received`` with each run of tuples of one stream as one record batch."""
    out: list[Any] = []
    run: list[Tuple] = []
    for tup in received:
        if type(tup) is RowBatch or tup.source_component == SYSTEM_COMPONENT_ID:
            if run:
                out.append(tuples_as_batch(run))
                run = []
            out.append(tup)
            continue
        if run and (
            run[-1].source_component != tup.source_component
            or run[-1].source_stream != tup.source_stream
        ):
            out.append(tuples_as_batch(run))
            run = []
        run.append(tup)
    if run:
        out.append(tuples_as_batch(run))
    return out
