"""What submitting a topology does in either mode: Storm's ``StormSubmitter`` checks.

The configuration is resolved over the defaults and checked, the topology's name is set
(Storm sets ``topology.name`` at submit), the tasks are laid out in a :class:`Plan`, and
each component's own configuration (and each windowed bolt's window) is checked as the
topology's is, before anything starts.
"""

from __future__ import annotations

from typing import Any

from sparkstorm.config import TOPOLOGY_NAME, check_key, check_value, resolve
from sparkstorm.state.signing import fill_state_secret
from sparkstorm.tasks.windowed import check_windowed
from sparkstorm.topology.builder import Topology
from sparkstorm.topology.components import ChecksSubmission
from sparkstorm.topology.plan import Plan
from sparkstorm.topology.windowing import WindowedBolt


def submitted(
    name: str, topology: Topology, conf: dict[str, Any] | None
) -> tuple[dict[str, Any], Plan]:
    """The resolved configuration and the plan of ``topology`` submitted as ``name``."""
    resolved = resolve(conf)
    resolved[TOPOLOGY_NAME] = name
    fill_state_secret(resolved)  # executors on other hosts sign state with the driver's
    plan = Plan(topology, resolved)
    for component_id, spec in plan.components.items():
        for key, value in spec.conf.items():
            check_key(key)
            check_value(key, value, f" of component {component_id!r}")
        if isinstance(spec.obj, ChecksSubmission):
            spec.obj.check_submission(plan.component_conf(component_id))
        if isinstance(spec.obj, WindowedBolt):
            conf_of, stateful = plan.component_conf(component_id), bool(plan.stateful_tasks)
            check_windowed(component_id, spec.obj, conf_of, spec.streams, stateful)
    plan.captured_components()  # a name the topology does not have fails here
    return resolved, plan
