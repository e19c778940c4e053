"""Spouts the scenario tests share."""

from __future__ import annotations

from typing import Any

from sparkstorm import Fields, Spout


class OneShotSpout(Spout):
    """Emits ``values`` once, under ``msg_id``, on a stream declaring ``fields``.

    Subclasses record what they see in ``ack`` and ``fail`` (on the class: each task
    gets a copy of the instance).
    """

    def __init__(self, values: list[Any], msg_id: Any, fields: Fields) -> None:
        self.values, self.msg_id, self.fields = values, msg_id, fields

    def open(self, conf, context, collector):
        self.collector = collector
        self.sent = False

    def next_tuple(self):
        if not self.sent:
            self.sent = True
            self.collector.emit(self.values, self.msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(self.fields)
