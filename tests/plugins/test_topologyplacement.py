"""TopologyPlacementGenerator: one placement per topology domain of a PodGroup's constraint."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched import Code, CycleState, Placement, Status, hookimpl
from kubesched.api import parse_object
from kubesched.cache import new_snapshot
from kubesched.framework.listers import StaticLister
from kubesched.testing import make_framework, make_node, make_pod
from kubesched_builtin.topologyplacement import TopologyPlacementGenerator


def group(name: str = "g", key: str | None = "rack"):
    """A gang PodGroup of 2, constrained to one domain of node label ``key`` if given."""
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    if key is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    return parse_object(
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec,
        }
    )


def node(name: str, rack: str | None):
    labels = {"rack": rack} if rack is not None else {}
    return make_node(name).labels(**labels).capacity(cpu="4", pods=110).obj()


def bound(name: str, node_name: str, grp: str = "g", ns: str = "default"):
    manifest = make_pod(name).namespace(ns).uid(name).node(node_name).manifest()
    manifest["spec"]["schedulingGroup"] = {"podGroupName": grp}
    return parse_object(manifest)


NODES = [node("a0", "a"), node("a1", "a"), node("b0", "b"), node("x", None)]

CASES = [
    # (id, the group's topology key, pods of groups with a node, placements by name)
    ("no-constraint-one-placement-of-all", None, [], {"": ["a0", "a1", "b0", "x"]}),
    ("one-per-domain-unlabelled-left-out", "rack", [], {"a": ["a0", "a1"], "b": ["b0"]}),
    ("a-scheduled-pod-pins-its-domain", "rack", [bound("p", "b0")], {"b": ["b0"]}),
    (
        "other-group-pins-nothing",
        "rack",
        [bound("p", "b0", grp="h")],
        {"a": ["a0", "a1"], "b": ["b0"]},
    ),
    (
        "same-name-other-namespace-pins-nothing",
        "rack",
        [bound("p", "b0", ns="other")],
        {"a": ["a0", "a1"], "b": ["b0"]},
    ),
    ("key-no-node-has", "zone", [], {}),
]


@pytest.mark.parametrize(
    ("key", "assigned", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_generate_placements(key, assigned, expected):
    grp = group(key=key)
    fw = make_framework(TopologyPlacementGenerator, lister=StaticLister([grp]))
    snapshot = new_snapshot(assigned, NODES)
    fw.set_snapshot(snapshot)
    placements, status = fw.run_placement_generate_plugins(CycleState(), grp, snapshot.list())
    assert status.is_success()
    assert {p.name: sorted(ni.name for ni in p.nodes) for p in placements} == expected


ERROR_CASES = [
    ("scheduled-pods-in-two-domains", [bound("p", "a0"), bound("q", "b0")], "more than 1 domain"),
    ("scheduled-pod-on-unlabelled-node", [bound("p", "x")], "no topology domain found for pod"),
]


@pytest.mark.parametrize(
    ("assigned", "reason"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES]
)
def test_scheduled_pods_without_one_domain_are_an_error(assigned, reason):
    grp = group()
    fw = make_framework(TopologyPlacementGenerator, lister=StaticLister([grp]))
    snapshot = new_snapshot(assigned, NODES)
    fw.set_snapshot(snapshot)
    placements, status = fw.run_placement_generate_plugins(CycleState(), grp, snapshot.list())
    assert (placements, status.code) == ([], Code.ERROR)
    assert status.message().startswith(
        'running PlacementGenerate plugin "TopologyPlacementGenerator": '
        "cannot determine domain for already scheduled pods: "
    )
    assert reason in status.message()


def test_without_a_pod_group_object_the_parent_is_the_placement():
    fw = make_framework(TopologyPlacementGenerator, lister=StaticLister([]))
    snapshot = new_snapshot([], NODES)
    fw.set_snapshot(snapshot)
    placements, status = fw.run_placement_generate_plugins(CycleState(), None, snapshot.list())
    assert status.is_success()
    assert [len(p.nodes) for p in placements] == [4]


class SplitByName:
    """A second generator: halves each placement by the first letter of the node names."""

    name = "SplitByName"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def generate_placements(self, parent):
        halves: dict[str, list] = {}
        for ni in parent.nodes:
            halves.setdefault(ni.name[-1] in "02", []).append(ni)
        return [Placement(f"{parent.name}/{k}", tuple(v)) for k, v in halves.items()]


class Broken:
    """A generator that fails in the way ``answer`` says."""

    name = "Broken"
    answer = "raise"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def generate_placements(self, parent):
        if self.answer == "raise":
            raise RuntimeError("boom")
        return Status() if self.answer == "success-status" else None


def test_generators_run_in_order_each_on_the_placements_of_the_one_before():
    grp = group()
    fw = make_framework(TopologyPlacementGenerator, SplitByName, lister=StaticLister([grp]))
    snapshot = new_snapshot([], NODES)
    fw.set_snapshot(snapshot)
    placements, status = fw.run_placement_generate_plugins(CycleState(), grp, snapshot.list())
    assert status.is_success()
    assert {p.name: sorted(ni.name for ni in p.nodes) for p in placements} == {
        "a/True": ["a0"],
        "a/False": ["a1"],
        "b/True": ["b0"],
    }


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("raise", "boom"),
        ("none", "returned NoneType from generate_placements"),
        ("success-status", "returned Status from generate_placements"),
    ],
    ids=["raises", "answers-nothing", "answers-a-success-status"],
)
def test_a_generator_that_fails_is_an_error_naming_it(answer, reason, monkeypatch):
    monkeypatch.setattr(Broken, "answer", answer)
    fw = make_framework(Broken, lister=StaticLister([]))
    snapshot = new_snapshot([], NODES)
    fw.set_snapshot(snapshot)
    placements, status = fw.run_placement_generate_plugins(CycleState(), None, snapshot.list())
    assert (placements, status.code) == ([], Code.ERROR)
    assert status.message().startswith('running PlacementGenerate plugin "Broken": ')
    assert reason in status.message()
