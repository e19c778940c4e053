"""Testing helpers for users' own topology tests: Storm's ``Testing`` toolkit in Python.

- :class:`LocalCluster`, :class:`FeederSpout`: run a topology in the test, feed it,
  move simulated time, read what the spouts saw (``cluster``);
- :func:`complete_topology`, :class:`MockedSources`, :class:`FixedTupleSpout`,
  :class:`TrackedTopology`: run a topology over fixed input to its end and read what
  every component emitted (``complete``); :class:`CompletableSpout`, a spout whose
  input ends (also ``sparkstorm.CompletableSpout``);
- :func:`test_tuple`, :class:`RecordingCollector`, :func:`prepared`: one bolt's
  ``execute`` without any cluster (``unit``);
- Storm's stock test components: :class:`TestWordSpout`, :class:`TestWordCounter`,
  :class:`TestGlobalCount`, :class:`TestAggregatesCounter`, :class:`IdentityBolt`
  (``components``).

See docs/testing.md, which lists Storm's names beside these.
"""

from sparkstorm.testing.cluster import FeederSpout, LocalCluster
from sparkstorm.testing.complete import (
    CompletedTopology,
    FixedTupleSpout,
    MockedSources,
    TrackedTopology,
    complete_topology,
)
from sparkstorm.testing.components import (
    IdentityBolt,
    TestAggregatesCounter,
    TestGlobalCount,
    TestWordCounter,
    TestWordSpout,
)
from sparkstorm.testing.unit import RecordingCollector, prepared, test_tuple
from sparkstorm.topology.components import CompletableSpout

__all__ = [
    "CompletableSpout",
    "CompletedTopology",
    "FeederSpout",
    "FixedTupleSpout",
    "IdentityBolt",
    "LocalCluster",
    "MockedSources",
    "RecordingCollector",
    "TestAggregatesCounter",
    "TestGlobalCount",
    "TestWordCounter",
    "TestWordSpout",
    "TrackedTopology",
    "complete_topology",
    "prepared",
    "test_tuple",
]
