"""Stream ids and fields of the ack traffic (Storm's ``Acker`` constants)."""

from __future__ import annotations

from sparkstorm.topology.fields import Fields

ACKER_COMPONENT_ID = "__acker"
ACKER_INIT_STREAM_ID = "__ack_init"
ACKER_ACK_STREAM_ID = "__ack_ack"
ACKER_FAIL_STREAM_ID = "__ack_fail"
ACKER_RESET_TIMEOUT_STREAM_ID = "__ack_reset_timeout"

INIT_FIELDS = Fields("id", "ack_val", "spout_task")
ACK_FIELDS = Fields("id", "ack_val")
FAIL_FIELDS = Fields("id", "reason")
RESET_FIELDS = Fields(
    "id",
)
RESULT_FIELDS = Fields("ids", "details")
"""Acker -> spout: the roots decided in one superstep, and their fail reasons (or None)."""

FIELDS_BY_STREAM = {
    ACKER_INIT_STREAM_ID: INIT_FIELDS,
    ACKER_ACK_STREAM_ID: ACK_FIELDS,
    ACKER_FAIL_STREAM_ID: FAIL_FIELDS,
    ACKER_RESET_TIMEOUT_STREAM_ID: RESET_FIELDS,
}
"""The fields of each stream that bolts and spouts send to the acker."""
