"""NodeTree: zone keys, zone-interleaved listing, add / update / remove."""

from __future__ import annotations

import pytest

from kubesched.cache import NodeTree, zone_key
from kubesched.cache.node_tree import (
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
)

from .builders import make_node


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({}, ""),
        ({"other": "x"}, ""),
        ({LABEL_TOPOLOGY_ZONE: "z1"}, ":\x00:z1"),
        ({LABEL_TOPOLOGY_REGION: "r1"}, "r1:\x00:"),
        ({LABEL_TOPOLOGY_REGION: "r1", LABEL_TOPOLOGY_ZONE: "z1"}, "r1:\x00:z1"),
        (
            {LABEL_FAILURE_DOMAIN_BETA_REGION: "r2", LABEL_FAILURE_DOMAIN_BETA_ZONE: "z2"},
            "r2:\x00:z2",
        ),
        (
            {
                LABEL_TOPOLOGY_REGION: "r1",
                LABEL_TOPOLOGY_ZONE: "z1",
                LABEL_FAILURE_DOMAIN_BETA_REGION: "r2",
                LABEL_FAILURE_DOMAIN_BETA_ZONE: "z2",
            },
            "r1:\x00:z1",
        ),
        ({LABEL_TOPOLOGY_REGION: "r1", LABEL_FAILURE_DOMAIN_BETA_ZONE: "z2"}, "r1:\x00:z2"),
        # A colon in the values cannot make two pairs collide.
        ({LABEL_TOPOLOGY_REGION: "a:", LABEL_TOPOLOGY_ZONE: "b"}, "a::\x00:b"),
    ],
    ids=[
        "no-labels",
        "unrelated-labels",
        "zone-only",
        "region-only",
        "ga-labels",
        "beta-labels",
        "ga-wins-over-beta",
        "mixed-ga-region-beta-zone",
        "colon-in-value",
    ],
)
def test_zone_key(labels: dict[str, str], expected: str) -> None:
    assert zone_key(make_node("n", labels=labels)) == expected


def _tree(spec: list[tuple[str, str]]) -> NodeTree:
    return NodeTree([make_node(name, zone=zone) for name, zone in spec])


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ([], []),
        ([("1", "A")], ["1"]),
        # The Kubernetes docs' example: A = {1, 2, 3, 4}, B = {5, 6}.
        (
            [("1", "A"), ("2", "A"), ("3", "A"), ("4", "A"), ("5", "B"), ("6", "B")],
            ["1", "5", "2", "6", "3", "4"],
        ),
        # Zone order is the order zones were first seen, not their names.
        ([("x", "Z"), ("y", "A"), ("z", "Z")], ["x", "y", "z"]),
        (
            [("a1", "A"), ("b1", "B"), ("c1", "C"), ("c2", "C"), ("c3", "C"), ("a2", "A")],
            ["a1", "b1", "c1", "a2", "c2", "c3"],
        ),
        ([("n1", ""), ("n2", ""), ("n3", "")], ["n1", "n2", "n3"]),
    ],
    ids=["empty", "one", "k8s-docs-example", "first-seen-zone-order", "three-zones", "no-zone"],
)
def test_list_interleaves_zones(spec: list[tuple[str, str]], expected: list[str]) -> None:
    tree = _tree(spec)
    assert tree.list() == expected
    assert tree.num_nodes == len(expected) == len(tree)


def test_add_existing_node_is_ignored() -> None:
    tree = _tree([("1", "A"), ("2", "B")])
    version = tree.version
    tree.add_node(make_node("1", zone="A"))
    assert tree.list() == ["1", "2"]
    assert tree.num_nodes == 2
    assert tree.version == version


def test_remove_node_and_zone() -> None:
    tree = _tree([("1", "A"), ("2", "A"), ("5", "B"), ("6", "C")])
    tree.remove_node(make_node("5", zone="B"))
    assert tree.list() == ["1", "6", "2"]
    assert tree.zones == [":\x00:A", ":\x00:C"]
    tree.remove_node(make_node("1"))  # found by name even with stale labels
    assert tree.list() == ["2", "6"]
    assert tree.num_nodes == 2


def test_remove_absent_node_raises() -> None:
    tree = _tree([("1", "A")])
    with pytest.raises(KeyError) as exc:
        tree.remove_node(make_node("nope", zone="A"))
    assert exc.value.args[0] == 'node "nope" in group ":\\x00:A" was not found'
    assert tree.num_nodes == 1


def test_re_added_zone_goes_last() -> None:
    tree = _tree([("a", "A"), ("b", "B")])
    tree.remove_node(make_node("a"))
    tree.add_node(make_node("a2", zone="A"))
    assert tree.zones == [":\x00:B", ":\x00:A"]
    assert tree.list() == ["b", "a2"]


@pytest.mark.parametrize(
    ("new_zone", "expected", "moved"),
    [("A", ["1", "3", "2"], False), ("B", ["2", "3", "1"], True), ("C", ["2", "3", "1"], True)],
    ids=["same-zone-no-op", "to-existing-zone", "to-new-zone"],
)
def test_update_node(new_zone: str, expected: list[str], moved: bool) -> None:
    tree = _tree([("1", "A"), ("2", "A"), ("3", "B")])
    version = tree.version
    tree.update_node(make_node("1", zone="A"), make_node("1", zone=new_zone))
    assert tree.list() == expected
    assert tree.num_nodes == 3
    assert (tree.version != version) is moved
    assert tree.zone_of("1") == f":\x00:{new_zone}"


def test_update_absent_node_adds_it() -> None:
    tree = _tree([("1", "A")])
    tree.update_node(None, make_node("2", zone="B"))
    assert tree.list() == ["1", "2"]
    assert "2" in tree
