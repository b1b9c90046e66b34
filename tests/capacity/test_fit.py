"""``capacity fit``: copies of a pod placed one after another until one fails (hand-checked)."""

from __future__ import annotations

import pytest

from kubesched.api import PriorityClass
from kubesched.capacity import capacity_fit, pod_template
from kubesched.errors import UserInputError
from kubesched.testing import make_node, make_pod

HOSTNAME = "kubernetes.io/hostname"


def _template(pod):
    template, extra = pod_template([pod], "template.yaml")
    assert extra == []
    return template


def _nodes(n: int, cpu: str = "4", pods: str = "110", zone: str = "zone-a"):
    return [
        make_node(f"n{i}").capacity(cpu=cpu, memory="16Gi", pods=pods).zone(zone).obj()
        for i in range(n)
    ]


@pytest.mark.parametrize(
    ("nodes", "pod", "count", "reason"),
    [
        # 4 cpu / 1.5 cpu: two per node, not 8 / 1.5 = 5 over both (fragmentation counts).
        (_nodes(2), make_pod("p").req(cpu="1500m").obj(), 4, "Insufficient cpu"),
        # Zero requests: only the pods allocatable (3 per node) limits them.
        (_nodes(2, pods="3"), make_pod("p").obj(), 6, "Too many pods"),
        # Required anti-affinity per hostname against its own copies: one per node.
        (
            _nodes(3),
            make_pod("p")
            .labels(app="solo")
            .req(cpu="100m")
            .pod_anti_affinity(HOSTNAME, {"app": "solo"})
            .obj(),
            3,
            "node(s) didn't match pod anti-affinity rules",
        ),
        # A pod larger than any node: none fit.
        (_nodes(2), make_pod("p").req(cpu="5").obj(), 0, "Insufficient cpu"),
    ],
    ids=[
        "bin-packing-fragmentation",
        "zero-requests-pods-limit",
        "anti-affinity-one-per-node",
        "too-large",
    ],
)
def test_counts_until_the_first_failure(nodes, pod, count, reason) -> None:
    report = capacity_fit(nodes, _template(pod))
    assert report.count == count
    assert report.stop.reason == "unschedulable"
    assert report.stop.message == (f"0/{len(nodes)} nodes are available: {len(nodes)} {reason}.")
    assert [(r.reason, r.nodes) for r in report.stop.reasons] == [(reason, len(nodes))]
    assert sum(n.count for n in report.nodes) == count
    assert report.cluster_nodes == len(nodes)


def test_counts_per_node_and_per_zone() -> None:
    nodes = [
        make_node("a1").capacity(cpu="2", memory="8Gi").zone("zone-a").obj(),
        make_node("a2").capacity(cpu="1", memory="8Gi").zone("zone-a").obj(),
        make_node("b1").capacity(cpu="3", memory="8Gi").zone("zone-b").obj(),
        make_node("none").capacity(cpu="1", memory="8Gi").obj(),
    ]
    report = capacity_fit(nodes, _template(make_pod("p").req(cpu="1").obj()))
    assert report.count == 7
    assert {n.node: (n.zone, n.count) for n in report.nodes} == {
        "b1": ("zone-b", 3),
        "a1": ("zone-a", 2),
        "a2": ("zone-a", 1),
        "none": ("", 1),
    }
    assert [(z.zone, z.count) for z in report.zones] == [("zone-a", 3), ("zone-b", 3), ("", 1)]


def test_the_cluster_pods_go_first_and_count_against_the_room() -> None:
    cluster = [
        *_nodes(1),
        make_pod("existing").req(cpu="3").obj(),
        make_pod("big").req(cpu="9").obj(),
    ]
    report = capacity_fit(cluster, _template(make_pod("p").req(cpu="500m").obj()))
    assert report.count == 2
    assert report.cluster_pending == 1  # "big" fits nowhere


def test_max_stops_early() -> None:
    report = capacity_fit(_nodes(2), _template(make_pod("p").req(cpu="100m").obj()), max_copies=5)
    assert report.count == 5
    assert report.stop.reason == "max"
    assert report.stop.message == ""


def _full_of_low_priority_pods():
    low = PriorityClass.model_validate(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "low"},
            "value": 10,
        }
    )
    high = PriorityClass.model_validate(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
    )
    pods = [
        make_pod(f"low-{n}-{i}").priority_class("low").req(cpu="1").node(f"n{n}").obj()
        for n in range(2)
        for i in range(4)
    ]
    return [low, high, *_nodes(2), *pods]


def test_preemption_is_off_unless_allowed() -> None:
    template = _template(make_pod("vip").priority_class("high").req(cpu="2").obj())
    off = capacity_fit(_full_of_low_priority_pods(), template)
    assert off.count == 0
    assert off.preemption is False
    assert "preemption" not in off.stop.message  # no PostFilter ran
    assert off.victims == []

    on = capacity_fit(_full_of_low_priority_pods(), template, allow_preemption=True)
    # Each copy preempts two 1-cpu pods: four copies empty both nodes.
    assert on.count == 4
    assert len(on.victims) == 8
    assert {v.priority for v in on.victims} == {10}
    assert on.stop.message.startswith(
        "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption:"
    )


def test_a_workload_template_and_its_priority_class() -> None:
    objects = [
        PriorityClass.model_validate(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "web"},
                "value": 100,
            }
        ),
        *_deployment("web", "1", "web"),
    ]
    template, extra = pod_template(objects, "web.yaml")
    assert template.description == "Deployment shop/web"
    assert [o.kind for o in extra] == ["PriorityClass"]
    report = capacity_fit([*_nodes(1), *extra], template)
    assert report.count == 4
    assert report.template == "Deployment shop/web"


def _deployment(name: str, cpu: str, priority_class: str | None = None):
    from kubesched.api import parse_object

    spec = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return [
        parse_object(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": "shop"},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
                },
            }
        )
    ]


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        ([], "expected exactly one Pod or workload"),
        (
            [make_pod("a").obj(), make_pod("b").obj()],
            "expected exactly one Pod or workload (Deployment, ReplicaSet, StatefulSet, Job, "
            "ReplicationController) to copy; found Pod default/a, Pod default/b",
        ),
        ([make_pod("a").node("n0").obj()], "names a node (spec.nodeName)"),
    ],
    ids=["none", "two", "bound-pod"],
)
def test_bad_templates(objects, message) -> None:
    with pytest.raises(UserInputError, match=None) as err:
        pod_template(objects, "t.yaml")
    assert message in str(err.value)
    assert "t.yaml" in str(err.value)


def test_a_daemon_set_is_refused() -> None:
    from kubesched.api import parse_object

    ds = parse_object(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {"matchLabels": {"a": "b"}},
                "template": {
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "a", "image": "a"}]},
                },
            },
        }
    )
    with pytest.raises(UserInputError, match="one pod per eligible node"):
        pod_template([ds], "ds.yaml")


def test_a_scheduler_name_no_profile_serves() -> None:
    template = _template(make_pod("p").scheduler_name("other").obj())
    with pytest.raises(UserInputError, match='no profile serves schedulerName "other"'):
        capacity_fit(_nodes(1), template)
