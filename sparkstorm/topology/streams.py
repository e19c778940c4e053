"""The system's reserved component and stream ids, and the fields of the ack traffic.

Storm keeps these in ``Constants`` (``__system``, ``__tick``) and ``Acker``
(``__acker``, ``__ack_init``, ...); here they are one module, below everything that
names them, so the user API and the machinery read the same constants.

Unlike Storm's, init and ack messages are batches: one message carries every root a
task tells one acker task about in one superstep, as two uint64 arrays (root ids and
ack vals), so the acker applies them with numpy instead of one Python object per root.
Fail and reset messages stay one per root; they are rare.
"""

from __future__ import annotations

from sparkstorm.topology.fields import Fields

SYSTEM_COMPONENT_ID = "__system"
SYSTEM_TASK_ID = -1
TICK_STREAM_ID = "__tick"
SYSTEM_STREAM_ID = "__system"
"""The stream every component has without declaring it, as in Storm: a bolt may
subscribe to it; nothing is emitted on it."""
SYSTEM_STREAM_FIELDS = Fields("event")

ACKER_COMPONENT_ID = "__acker"
ACKER_INIT_STREAM_ID = "__ack_init"
ACKER_ACK_STREAM_ID = "__ack_ack"
ACKER_FAIL_STREAM_ID = "__ack_fail"
ACKER_RESET_TIMEOUT_STREAM_ID = "__ack_reset_timeout"
ACKER_HOLD_STREAM_ID = "__ack_hold"
"""Acks of a stateful bolt: they count once a checkpoint commits the state they changed."""
CHECKPOINT_STREAM_ID = "__checkpoint"
"""Driver -> stateful tasks and ackers: prepare, commit or roll back a checkpoint."""

INIT_FIELDS = Fields("ids", "ack_vals", "spout_task")
ACK_FIELDS = Fields("ids", "ack_vals")
FAIL_FIELDS = Fields("id", "reason")
RESET_FIELDS = Fields(
    "id",
)
RESULT_FIELDS = Fields("ids", "details")
"""Acker -> spout: the roots decided in one superstep, and their fail reasons (or None)."""

CHECKPOINT_FIELDS = Fields("action", "txid")

FIELDS_BY_STREAM = {
    ACKER_INIT_STREAM_ID: INIT_FIELDS,
    ACKER_ACK_STREAM_ID: ACK_FIELDS,
    ACKER_HOLD_STREAM_ID: ACK_FIELDS,
    ACKER_FAIL_STREAM_ID: FAIL_FIELDS,
    ACKER_RESET_TIMEOUT_STREAM_ID: RESET_FIELDS,
}
"""The fields of each stream that bolts and spouts send to the acker."""
