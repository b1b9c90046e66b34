"""Workload-aware preemption: what a pod group preempts, as a unit, in the embedded cluster
(the cases compared with kube-scheduler v1.36 are in tests/pod_group_scenarios.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.config import default_configuration
from kubesched.config.effective import effective_configuration
from kubesched.features import parse_feature_gates
from kubesched.framework.registry import default_registry
from kubesched.scheduler.pod_group_preemption import Victim
from kubesched.simulate.driver import Simulation
from kubesched.testing import make_node, make_pod
from tests.pod_group_scenarios import PREEMPTION_GATES, PRIORITY_CLASSES


def pod_group(name: str, min_count: int, priority_class: str, mode: str = "Pod") -> Any:
    return parse_object(
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "schedulingPolicy": {"gang": {"minCount": min_count}},
                "priorityClassName": priority_class,
                "disruptionMode": mode,
            },
        }
    )


def pod(name: str, group: str | None, priority_class: str, node: str | None = None) -> Any:
    b = make_pod(name).req(cpu="3").priority_class(priority_class)
    if node:
        b = b.node(node)
    manifest = b.manifest()
    manifest["spec"]["terminationGracePeriodSeconds"] = 0
    if group:
        manifest["spec"]["schedulingGroup"] = {"podGroupName": group}
    return parse_object(manifest)


def run(first: list[Any], then: list[Any]) -> set[str]:
    """Create ``first``, let it settle, then ``then``; the pods left, by name."""
    registry = default_registry()
    gates = parse_feature_gates([PREEMPTION_GATES])
    config = effective_configuration(default_configuration(registry, gates), registry, gates=gates)
    objects = [parse_object(pc) for pc in PRIORITY_CLASSES]
    nodes = [make_node(f"n{i}").capacity(cpu="4", pods=110).obj() for i in range(3)]
    sim = Simulation([*objects, *nodes, *first], config=config, registry=registry)
    try:
        sim.run()
        for obj in then:
            sim.cluster.create(obj)
        sim.run()
        return {p.name for p in sim.cluster.objects("Pod") if p.spec.node_name}
    finally:
        sim.close()


GANG = [pod_group("g", 2, "high"), pod("g-0", "g", "high"), pod("g-1", "g", "high")]


@pytest.mark.parametrize(
    ("mode", "left"),
    [
        # One victim pod is enough: the other is given back.
        ("Pod", {"g-0", "g-1", "v-1"}),
        # The victim group is one unit: giving it back would not leave room, so both go.
        ("PodGroup", {"g-0", "g-1"}),
    ],
    ids=["pods-one-by-one", "group-as-a-unit"],
)
def test_a_victim_group_goes_as_a_unit_in_podgroup_disruption_mode(mode, left):
    victims = [pod_group("v", 2, "low", mode), pod("v-0", "v", "low"), pod("v-1", "v", "low")]
    assert run(victims, GANG) == left


def test_higher_priority_pods_are_never_victims():
    first = [pod("v-0", None, "high"), pod("v-1", None, "high"), pod("v-2", None, "high")]
    assert run(first, GANG) == {"v-0", "v-1", "v-2"}


def _victim(priority: int, pods: int, is_group: bool) -> Victim:
    return Victim(tuple(object() for _ in range(pods)), priority, is_group)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (_victim(10, 1, False), _victim(5, 1, False)),
        (_victim(5, 1, True), _victim(5, 1, False)),
        (_victim(5, 3, True), _victim(5, 2, True)),
    ],
    ids=["higher-priority", "group-before-pod", "larger-group"],
)
def test_more_important_victims_sort_first(a, b, monkeypatch):
    monkeypatch.setattr("kubesched.scheduler.pod_group_preemption.pod_start_time", lambda _p: 0.0)
    assert sorted([b, a], key=Victim.importance) == [a, b]
