"""``capacity nodes``: the fewest new nodes for a workload (cases checked by hand)."""

from __future__ import annotations

import pytest

from kubesched.capacity.nodes import COST_ANNOTATION, NodeShape, capacity_nodes, node_shapes
from kubesched.errors import UserInputError
from kubesched.testing import make_node, make_pod

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _shape(name: str, cpu: str = "4", zone: str = "zone-a", cost: float = 1.0, **extra: str):
    node = make_node(name).capacity(cpu=cpu, memory="32Gi", **extra).zone(zone).obj()
    return NodeShape(node, cost)


def _pods(n: int, cpu: str = "1", **labels: str):
    return [make_pod(f"w{i}").labels(labels or {"app": "w"}).req(cpu=cpu).obj() for i in range(n)]


def test_nothing_needed_when_the_workload_fits() -> None:
    cluster = [make_node("n0").capacity(cpu="8", memory="32Gi").obj()]
    report = capacity_nodes(cluster, _pods(4), [_shape("new")])
    assert report.feasible and report.plan is not None
    assert report.plan.total_nodes == 0
    assert report.pending_without_new_nodes == 0
    assert report.lower_bound_nodes == 0
    assert report.optimal


def test_bin_packing_meets_the_resource_bound() -> None:
    # 8 pods of 1 cpu, no cluster at all: two 4-cpu nodes, which is the bound.
    report = capacity_nodes([], _pods(8), [_shape("new")])
    assert report.plan is not None
    assert report.plan.nodes == {"new": 2}
    assert report.plan.pods_per_new_node == {"new-1": 4, "new-2": 4}
    assert report.lower_bound_nodes == 2
    assert report.optimal


def test_fragmentation_needs_more_than_the_bound() -> None:
    # 5 pods of 1.5 cpu on 4-cpu nodes: 7.5 cpu, so the bound says 2 nodes; but only two
    # such pods fit a node, so 3 are needed.
    report = capacity_nodes([], _pods(5, cpu="1500m"), [_shape("new")])
    assert report.plan is not None
    assert report.plan.total_nodes == 3
    assert report.lower_bound_nodes == 2
    assert not report.optimal


def test_anti_affinity_forces_one_pod_per_node() -> None:
    cluster = [make_node(f"n{i}").capacity(cpu="16", memory="32Gi").obj() for i in range(2)]
    workload = [
        make_pod(f"w{i}")
        .labels(app="solo")
        .req(cpu="100m")
        .pod_anti_affinity(HOSTNAME, {"app": "solo"})
        .obj()
        for i in range(5)
    ]
    report = capacity_nodes(cluster, workload, [_shape("new")])
    assert report.pending_without_new_nodes == 3
    assert report.plan is not None
    assert report.plan.nodes == {"new": 3}
    assert set(report.plan.pods_per_new_node.values()) == {1}
    # Resources alone would need no node at all: the answer is not proven optimal.
    assert report.lower_bound_nodes == 0
    assert not report.optimal


def _spread_workload(n: int):
    return [
        make_pod(f"w{i}")
        .labels(app="spread")
        .req(cpu="1")
        .spread_constraint(1, ZONE, selector={"app": "spread"}, min_domains=3)
        .obj()
        for i in range(n)
    ]


def test_a_spread_constraint_makes_a_new_zone_necessary() -> None:
    # Two zones, minDomains 3: the global minimum counts as 0, so each zone takes one
    # pod (maxSkew 1) and the rest wait. A node in a third zone unlocks the spread:
    # 3 pods per zone. More nodes in an existing zone never help.
    cluster = [
        make_node("a").capacity(cpu="16", memory="32Gi").zone("zone-a").obj(),
        make_node("b").capacity(cpu="16", memory="32Gi").zone("zone-b").obj(),
    ]
    third_zone = capacity_nodes(
        cluster, _spread_workload(9), [_shape("c", cpu="16", zone="zone-c")]
    )
    assert third_zone.pending_without_new_nodes == 7
    assert third_zone.plan is not None and third_zone.plan.nodes == {"c": 1}
    assert third_zone.plan.pods_per_new_node == {"c-1": 3}

    same_zone = capacity_nodes(cluster, _spread_workload(9), [_shape("a", cpu="16", zone="zone-a")])
    assert not same_zone.feasible
    assert same_zone.plan is None
    assert len(same_zone.unplaceable) == 7
    assert all("topology spread" in p.message for p in same_zone.unplaceable)


def test_several_shapes_mix_to_the_cheapest_plan() -> None:
    # 2 GPU pods (1 cpu, 1 gpu) and 8 cpu pods (1 cpu). gpu nodes (4 cpu, 1 gpu) cost 5,
    # cpu nodes (4 cpu) cost 1. cpu nodes alone cannot run the GPU pods; gpu nodes alone
    # need 3 (cost 15). Two gpu nodes are needed anyway (cost 10, 8 cpu); the 10 cpu of
    # the workload need one more node, the cheapest a cpu node: cost 11.
    gpu_pods = [
        make_pod(f"g{i}").labels(app="g").req(cpu="1", **{"nvidia.com/gpu": "1"}).obj()
        for i in range(2)
    ]
    shapes = [
        _shape("cpu", cost=1.0),
        _shape("gpu", cost=5.0, **{"nvidia.com/gpu": "1"}),
    ]
    report = capacity_nodes([], [*gpu_pods, *_pods(8)], shapes)
    assert report.plan is not None
    assert report.plan.nodes == {"cpu": 1, "gpu": 2}
    assert report.plan.cost == 11
    assert {tuple(a.nodes.items()) for a in report.alternatives} == {(("gpu", 3),)}


def test_a_pod_no_shape_can_hold() -> None:
    report = capacity_nodes([], [make_pod("huge").req(cpu="8").obj()], [_shape("new")])
    assert not report.feasible
    assert report.plan is None
    assert [p.pod for p in report.unplaceable] == ["default/huge"]
    assert "Insufficient cpu" in report.unplaceable[0].message


def test_daemon_pods_on_new_nodes_count_in_the_bound() -> None:
    from kubesched.api import parse_object

    agent = parse_object(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "kube-system"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {
                        "containers": [
                            {"name": "a", "image": "a", "resources": {"requests": {"cpu": "1"}}}
                        ]
                    },
                },
            },
        }
    )
    # 6 pods of 1 cpu; each new 4-cpu node keeps 1 cpu for the agent: 3 per node → 2.
    report = capacity_nodes([agent], _pods(6), [_shape("new")])
    assert report.plan is not None and report.plan.nodes == {"new": 2}
    assert report.lower_bound_nodes == 2
    assert report.optimal


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({COST_ANNOTATION: "cheap"}, 'Invalid value: "cheap": must be a positive number'),
        ({COST_ANNOTATION: "0"}, 'Invalid value: "0": must be a positive number'),
        ({COST_ANNOTATION: "nan"}, 'Invalid value: "nan": must be a positive number'),
    ],
    ids=["not-a-number", "zero", "nan"],
)
def test_bad_costs(annotations, message) -> None:
    node = make_node("t").capacity(cpu="4").obj()
    node.metadata.annotations.update(annotations)
    with pytest.raises(UserInputError) as err:
        node_shapes([node], "t.yaml")
    assert message in str(err.value)
    assert "Node t" in str(err.value)


def test_templates_must_be_nodes_with_distinct_names() -> None:
    with pytest.raises(UserInputError, match="holds Nodes only"):
        node_shapes([make_pod("p").obj()], "t.yaml")
    with pytest.raises(UserInputError, match="share a name"):
        node_shapes([make_node("t").obj(), make_node("t").obj()], "t.yaml")
    with pytest.raises(UserInputError, match="no node template"):
        node_shapes([], "t.yaml")
