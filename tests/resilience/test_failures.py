"""The failure sets: every node, every zone, seeded random draws, and their edge cases."""

from __future__ import annotations

import pytest

from kubesched.api import Node
from kubesched.errors import UserInputError
from kubesched.notices import collecting_notices
from kubesched.resilience import Failure, every_node, every_zone, random_failures

ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str | None = None) -> Node:
    labels = {ZONE: zone} if zone else {}
    return Node.model_validate({"metadata": {"name": name, "labels": labels}})


NODES = [node("n3", "b"), node("n1", "a"), node("n2", "a"), node("n4")]


def test_every_node_is_one_failure_by_name() -> None:
    assert every_node(NODES) == [
        Failure("node n1", ("n1",)),
        Failure("node n2", ("n2",)),
        Failure("node n3", ("n3",)),
        Failure("node n4", ("n4",)),
    ]


def test_every_zone_fails_its_nodes_together_and_names_the_unlabelled() -> None:
    with collecting_notices() as notices:
        failures = every_zone(NODES, "c.yaml")
    assert failures == [Failure("zone a", ("n1", "n2")), Failure("zone b", ("n3",))]
    assert [str(n) for n in notices] == [
        f"c.yaml: 1 node(s) have no {ZONE} label and are in no zone's failure: n4"
    ]


def test_every_zone_without_any_zone_label_is_an_error() -> None:
    with pytest.raises(UserInputError, match=f"no node has the label {ZONE}") as err:
        every_zone([node("n1"), node("n2")], "c.yaml")
    assert str(err.value).startswith("c.yaml: ")


@pytest.mark.parametrize(
    ("count", "size"),
    [(1, 1), (5, 2), (3, 4)],
    ids=["one-node", "pairs", "every-node-at-once"],
)
def test_random_draws_are_seeded_distinct_nodes(count: int, size: int) -> None:
    first = random_failures(NODES, count, size, seed=7, source="c.yaml")
    assert first == random_failures(list(reversed(NODES)), count, size, seed=7, source="c.yaml")
    assert [f.name for f in first] == [f"random #{i + 1}" for i in range(count)]
    for f in first:
        assert len(set(f.nodes)) == size and list(f.nodes) == sorted(f.nodes)


def test_random_draws_differ_with_the_seed() -> None:
    draws = {
        tuple(f.nodes for f in random_failures(NODES, 4, 2, seed=s, source="c")) for s in range(5)
    }
    assert len(draws) > 1


def test_random_size_above_the_node_count_is_an_error() -> None:
    with pytest.raises(UserInputError, match=r"--size 5 is more than the cluster's 4 node\(s\)"):
        random_failures(NODES, 1, 5, seed=0, source="c.yaml")
