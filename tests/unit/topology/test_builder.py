"""create_topology and the declarers reject bad topologies with errors naming the culprit."""

import re

import pytest

from sparkstorm import Bolt, Fields, InvalidTopologyError, TopologyBuilder
from sparkstorm.testing import FeederSpout


class Words(Bolt):
    def execute(self, tup):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))
        declarer.declare(Fields("word"), stream="direct-words", direct=True)


def base():
    builder = TopologyBuilder()
    builder.set_spout("sentences", FeederSpout(Fields("sentence")))
    builder.set_bolt("split", Words()).shuffle_grouping("sentences")
    return builder


def test_valid_topology_lists_components():
    topology = base().create_topology()
    assert list(topology.components) == ["sentences", "split"]
    assert [s.component_id for s in topology.spouts] == ["sentences"]


def test_unknown_component():
    builder = base()
    builder.set_bolt("count", Words()).shuffle_grouping("splitt")
    with pytest.raises(InvalidTopologyError, match=re.escape("'splitt'")) as err:
        builder.create_topology()
    assert err.value.component == "count"


def test_unknown_stream():
    builder = base()
    builder.set_bolt("count", Words()).shuffle_grouping("split", "nope")
    with pytest.raises(InvalidTopologyError, match=re.escape("stream 'nope' of 'split'")) as err:
        builder.create_topology()
    assert (err.value.component, err.value.stream) == ("count", "nope")


def test_grouping_field_not_declared():
    builder = base()
    builder.set_bolt("count", Words()).fields_grouping("split", Fields("wrd"))
    with pytest.raises(InvalidTopologyError, match=re.escape("field 'wrd'")) as err:
        builder.create_topology()
    assert (err.value.component, err.value.stream, err.value.field) == ("count", "default", "wrd")


def test_direct_grouping_on_non_direct_stream_and_vice_versa():
    builder = base()
    builder.set_bolt("count", Words()).direct_grouping("split")
    with pytest.raises(InvalidTopologyError, match="not direct"):
        builder.create_topology()
    builder = base()
    builder.set_bolt("count", Words()).shuffle_grouping("split", "direct-words")
    with pytest.raises(InvalidTopologyError, match="needs direct_grouping"):
        builder.create_topology()


@pytest.mark.parametrize("bad_id", ["__acker", "__mine"])
def test_reserved_component_ids(bad_id):
    with pytest.raises(InvalidTopologyError, match=re.escape(repr(bad_id))):
        TopologyBuilder().set_spout(bad_id, FeederSpout(Fields("x")))


def test_reserved_stream_ids():
    with pytest.raises(InvalidTopologyError, match=re.escape("'__tick'")):
        FeederSpout(Fields("x"), stream="__tick").declare_output_fields(
            __import__("sparkstorm").OutputFieldsDeclarer("c")
        )


def test_duplicate_ids_and_bad_parallelism():
    builder = base()
    with pytest.raises(InvalidTopologyError, match="used twice"):
        builder.set_bolt("split", Words())
    with pytest.raises(InvalidTopologyError, match="parallelism"):
        builder.set_bolt("other", Words(), 0)


def test_no_spout_and_wrong_component_types():
    with pytest.raises(InvalidTopologyError, match="at least one spout"):
        TopologyBuilder().create_topology()
    with pytest.raises(InvalidTopologyError, match="needs a Spout"):
        TopologyBuilder().set_spout("s", Words())
    with pytest.raises(InvalidTopologyError, match="needs a Bolt"):
        TopologyBuilder().set_bolt("b", FeederSpout(Fields("x")))


def test_fields_and_tuple_access():
    from sparkstorm import Tuple

    f = Fields("word", "count")
    t = Tuple(["a", 2], f, "c", "default", 1)
    assert (t[0], t["count"], t.get("word"), len(t)) == ("a", 2, "a", 2)
    with pytest.raises(KeyError, match="'cnt' is not one of"):
        t.get("cnt")
    assert not t.is_tick()
    assert Fields(["word", "count"]) == f
