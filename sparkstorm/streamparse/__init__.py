"""streamparse's API on sparkstorm: a streamparse project runs unchanged, without a JVM.

Under ``sparkstorm run``, ``import streamparse`` (and ``streamparse.storm``,
``streamparse.dsl`` and the other modules a project imports) gives this package, whether
or not the real streamparse is installed: its classes would wrap the process's
stdin/stdout, install signal handlers and hold locks, none of which a component copied
into sparkstorm's workers can do. :func:`install_import_hook` does the same for a
script or a test of one's own. See docs/coming-from-streamparse.md.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

from sparkstorm.engines.user_code import Alias, add_alias
from sparkstorm.streamparse.components import (
    BatchingBolt,
    Bolt,
    Component,
    JavaBolt,
    JavaSpout,
    ReliableSpout,
    ShellBolt,
    ShellSpout,
    Spout,
    StormContext,
    TicklessBatchingBolt,
    Tuple,
)
from sparkstorm.streamparse.convert import is_streamparse_topology, to_topology
from sparkstorm.streamparse.specs import (
    ComponentSpec,
    GlobalStreamId,
    Grouping,
    Stream,
    Topology,
    TopologyType,
)

__all__ = [
    "BatchingBolt",
    "Bolt",
    "Component",
    "ComponentSpec",
    "GlobalStreamId",
    "Grouping",
    "JavaBolt",
    "JavaSpout",
    "ReliableSpout",
    "ShellBolt",
    "ShellSpout",
    "Spout",
    "StormContext",
    "Stream",
    "TicklessBatchingBolt",
    "Topology",
    "TopologyType",
    "Tuple",
    "install_import_hook",
    "is_streamparse_topology",
    "to_topology",
]

MODULES = (
    "streamparse",
    "streamparse.bolt",
    "streamparse.spout",
    "streamparse.component",
    "streamparse.storm",
    "streamparse.storm.bolt",
    "streamparse.storm.spout",
    "streamparse.storm.component",
    "streamparse.dsl",
    "streamparse.dsl.bolt",
    "streamparse.dsl.spout",
    "streamparse.dsl.component",
    "streamparse.dsl.stream",
    "streamparse.dsl.topology",
)
"""The modules of streamparse a project's code imports from; each gives this package."""

STREAMPARSE = Alias(
    "streamparse",
    dict.fromkeys(MODULES, __name__),
    "sparkstorm stands in for streamparse here and has its component and topology "
    "classes only (streamparse, streamparse.storm, streamparse.dsl and their modules); "
    "the command-line tools are sparkstorm's (docs/coming-from-streamparse.md)",
)


def install_import_hook() -> None:
    """Make ``import streamparse`` give this package, in this process and in the workers.

    ``sparkstorm run`` calls it; call it before importing a streamparse project's
    modules from a script or a test of one's own.
    """
    add_alias(STREAMPARSE)
