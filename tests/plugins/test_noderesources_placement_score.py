"""NodeResourcesFit's placement score: MostAllocated over a placement's nodes with the pod
group's placed pods on them, whatever the configured strategy (its resource weights apply)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched import CycleState, Placement, PodGroupAssignments
from kubesched.api import Pod, parse_object
from kubesched.cache import new_snapshot
from kubesched.config import config_from_dict, effective_configuration
from kubesched.features import parse_feature_gates
from kubesched.framework.listers import StaticLister
from kubesched.framework.registry import default_registry
from kubesched.testing import make_framework, make_node, make_pod
from kubesched_builtin.noderesources.fit import NodeResourcesFit
from kubesched_builtin.podgrouppodscount import PodGroupPodsCount

GROUP = parse_object(
    {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
    }
)
GPU = "nvidia.com/gpu"


def node(name: str, cpu: str = "5", memory: str = "5000", gpu: int | None = None):
    amounts: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": 110}
    if gpu is not None:
        amounts[GPU] = gpu
    return make_node(name).capacity(amounts).obj()


def pod(name: str, on: str | None = None, requests: dict[str, Any] | None = None) -> Pod:
    """A pod requesting ``requests`` (one container; none without), bound to ``on``."""
    b = make_pod(name).uid(name)
    b = b.container(requests) if requests is not None else b.container()
    return b.node(on).obj() if on else b.obj()


def shaped(name: str, requests: dict[str, Any], init: dict[str, Any], sidecar: bool = False) -> Pod:
    """A pod of one container requesting ``requests`` and an init container (a sidecar
    with ``sidecar``) requesting ``init``."""
    return make_pod(name).uid(name).container(requests).init_container(init, sidecar=sidecar).obj()


def pod_level(name: str, requests: dict[str, Any], pod_requests: dict[str, Any]) -> Pod:
    """A pod of one container requesting ``requests``, ``pod_requests`` at the pod level."""
    manifest = make_pod(name).uid(name).container(requests).manifest()
    manifest["spec"]["resources"] = {"requests": pod_requests}
    return parse_object(manifest)


def weights(cpu: int = 1, memory: int = 1, gpu: int | None = None) -> list[dict[str, Any]]:
    out = [{"name": "cpu", "weight": cpu}, {"name": "memory", "weight": memory}]
    return out + ([{"name": GPU, "weight": gpu}] if gpu is not None else [])


def args(kind: str = "LeastAllocated", resources: list[dict[str, Any]] | None = None):
    strategy: dict[str, Any] = {"type": kind, "resources": resources or weights()}
    if kind == "RequestedToCapacityRatio":
        strategy["requestedToCapacityRatio"] = {
            "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
        }
    return {"scoringStrategy": strategy}


def score(
    fit_args: dict[str, Any],
    nodes: list[Any],
    placement: list[str],
    placed: list[tuple[Pod, str]],
    running: list[Pod] = (),
) -> int:
    fw = make_framework(NodeResourcesFit, args={"NodeResourcesFit": fit_args})
    snapshot = new_snapshot(list(running), nodes)
    fw.set_snapshot(snapshot)
    candidate = PodGroupAssignments(
        Placement("p", tuple(snapshot.get(n) for n in placement)), tuple(placed)
    )
    totals, status = fw.run_placement_score_plugins(CycleState(), GROUP, [candidate])
    assert status.is_success(), status.message()
    return totals[0]


TWO = [node("n1"), node("n2")]
THREE = [*TWO, node("n3")]
FOO = pod("foo", requests={"cpu": "1", "memory": "0"})
BAR = pod("bar", requests={"cpu": "2", "memory": "2000"})

CASES = [
    # (id, args, nodes, placement, placed (pod, node), running pods, score)
    # cpu 3/10 (30), memory 2000/10000 (20): (30 + 20) / 2
    ("sums-over-the-placement", args(), TWO, ["n1", "n2"], [(FOO, "n1"), (BAR, "n2")], [], 25),
    (
        "resource-weights-apply",
        args(resources=weights(cpu=4)),
        TWO,
        ["n1", "n2"],
        [(FOO, "n1"), (BAR, "n2")],
        [],
        28,  # (4 * 30 + 20) / 5
    ),
    ("two-pods-on-one-node", args(), TWO, ["n1", "n2"], [(FOO, "n1"), (BAR, "n1")], [], 25),
    (
        "nodes-outside-the-placement-do-not-count",
        args(),
        THREE,
        ["n1", "n2"],
        [(FOO, "n1"), (BAR, "n2")],
        [],
        25,
    ),
    (
        "running-pods-count",
        args(),
        TWO,
        ["n1", "n2"],
        [(FOO, "n1"), (BAR, "n2")],
        [pod("baz", "n1", {"cpu": "1", "memory": "0"})],
        30,  # cpu 4/10 (40), memory 20
    ),
    (
        "running-pods-outside-the-placement-do-not-count",
        args(),
        THREE,
        ["n1", "n2"],
        [(FOO, "n1"), (BAR, "n2")],
        [pod("baz", "n3", {"cpu": "1", "memory": "0"})],
        25,
    ),
    (
        "most-allocated-args-score-the-same",
        args("MostAllocated"),
        TWO,
        ["n1", "n2"],
        [(FOO, "n1"), (BAR, "n2")],
        [],
        25,
    ),
    (
        "requested-to-capacity-ratio-args-score-the-same",
        args("RequestedToCapacityRatio"),
        TWO,
        ["n1", "n2"],
        [(FOO, "n1"), (BAR, "n2")],
        [],
        25,
    ),
    (
        # Containers without requests count 100m cpu and 200Mi memory, as in Score.
        "missing-requests-count-as-defaults",
        args(),
        [node("n1", cpu="1", memory="1Gi")],
        ["n1"],
        [(pod("a", requests={}), "n1"), (pod("b", requests={}), "n1")],
        [],
        29,  # cpu 200m/1 (20), memory 400Mi/1Gi (39): (20 + 39) / 2
    ),
    (
        "explicit-zero-requests-count-zero",
        args(),
        [node("n1", cpu="1", memory="1Gi")],
        ["n1"],
        [(pod("a", requests={"cpu": "0", "memory": "0"}), "n1")],
        [],
        0,
    ),
    (
        "over-committed-capped-at-100",
        args(),
        [node("n1", cpu="100m", memory="100Mi")],
        ["n1"],
        [(pod("a", requests={}), "n1")],
        [pod("r", "n1", {})],
        100,
    ),
    (
        "scalar-requested-by-the-group-counts",
        args(resources=weights(gpu=1)),
        [node("n1", gpu=5), node("n2", gpu=5)],
        ["n1", "n2"],
        [
            (pod("foo", requests={"cpu": "1", "memory": "0", GPU: 0}), "n1"),
            (pod("bar", requests={"cpu": "1", "memory": "2000", GPU: 1}), "n2"),
        ],
        [pod("baz", "n1", {"cpu": "1", "memory": "0"})],
        20,  # cpu 30, memory 20, gpu 1/10 (10)
    ),
    (
        "scalar-not-requested-by-the-group-is-not-scored",
        args(resources=weights(gpu=1)),
        [node("n1", gpu=5), node("n2", gpu=5)],
        ["n1", "n2"],
        [
            (pod("foo", requests={"cpu": "1", "memory": "0"}), "n1"),
            (pod("bar", requests={"cpu": "1", "memory": "2000"}), "n2"),
        ],
        [pod("baz", "n1", {"cpu": "1", "memory": "0", GPU: 1})],
        25,  # cpu 30, memory 20; the running pod's gpu is not scored
    ),
    (
        # The larger of the init container and the containers' sum: cpu 3/10 (30).
        "init-container-counts-its-largest-request",
        args(),
        TWO,
        ["n1", "n2"],
        [(shaped("a", {"cpu": "1", "memory": "0"}, {"cpu": "3", "memory": "0"}), "n1")],
        [],
        15,
    ),
    (
        # A sidecar adds to the containers: cpu 3/10 (30).
        "sidecar-adds-to-the-containers",
        args(),
        TWO,
        ["n1", "n2"],
        [(shaped("a", {"cpu": "2", "memory": "0"}, {"cpu": "1", "memory": "0"}, True), "n1")],
        [],
        15,
    ),
    (
        # Upstream's placement scorer leaves pod-level requests out: cpu 1/10 (10).
        "pod-level-requests-do-not-count",
        args(),
        TWO,
        ["n1", "n2"],
        [(pod_level("a", {"cpu": "1", "memory": "0"}, {"cpu": "3"}), "n1")],
        [],
        5,
    ),
    (
        # ephemeral-storage scored: the running pods' requests count (Requested, as in
        # Score): cpu 2/20 (10), memory 0, ephemeral 16Gi/40Gi (40).
        "ephemeral-storage-counts-the-running-pods",
        args(resources=[*weights(), {"name": "ephemeral-storage", "weight": 1}]),
        [
            make_node(n).capacity(cpu=10, memory=5000, pods=110, ephemeral_storage="20Gi").obj()
            for n in ("n1", "n2")
        ],
        ["n1", "n2"],
        [(pod("a", requests={"cpu": "2", "memory": "0", "ephemeral-storage": "4Gi"}), "n1")],
        [pod("r", "n2", {"cpu": "0", "memory": "0", "ephemeral-storage": "12Gi"})],
        16,
    ),
    (
        # A node without the resource adds nothing to the sums: gpu 2/2 (100) on n1 alone
        # (n2 lacks it, n3 has 0); cpu 2/15 (13), memory 0.
        "scalar-missing-or-zero-on-some-nodes",
        args(resources=weights(gpu=1)),
        [node("n1", gpu=2), node("n2"), node("n3", gpu=0)],
        ["n1", "n2", "n3"],
        [
            (pod("a", requests={"cpu": "1", "memory": "0", GPU: 1}), "n1"),
            (pod("b", requests={"cpu": "1", "memory": "0", GPU: 1}), "n1"),
        ],
        [],
        37,
    ),
    ("no-pod-placed", args(), TWO, ["n1", "n2"], [], [], 0),
    ("a-placement-without-nodes", args(), TWO, [], [(FOO, "n1")], [], 0),
    (
        "a-pod-on-a-node-gone-from-the-snapshot-is-left-out",
        args(),
        TWO,
        ["n1", "n2"],
        [(FOO, "n1"), (BAR, "gone")],
        [],
        5,  # cpu 1/10 (10), memory 0
    ),
]


@pytest.mark.parametrize(
    ("fit_args", "nodes", "placement", "placed", "running", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_score_placement(fit_args, nodes, placement, placed, running, expected):
    assert score(fit_args, nodes, placement, placed, running) == expected


def _candidates(snapshot, racks: dict[str, list[str]], placed: dict[str, list[tuple[Pod, str]]]):
    return [
        PodGroupAssignments(
            Placement(rack, tuple(snapshot.get(n) for n in names)), tuple(placed[rack])
        )
        for rack, names in racks.items()
    ]


def test_scores_are_not_normalised_and_the_weight_multiplies_them():
    nodes = [node("a0"), node("b0"), node("b1")]
    fw = make_framework(NodeResourcesFit, weights={"NodeResourcesFit": 2})
    snapshot = new_snapshot([], nodes)
    fw.set_snapshot(snapshot)
    p = pod("p", requests={"cpu": "1", "memory": "1000"})
    candidates = _candidates(
        snapshot, {"a": ["a0"], "b": ["b0", "b1"]}, {"a": [(p, "a0")], "b": [(p, "b0")]}
    )
    totals, status = fw.run_placement_score_plugins(CycleState(), GROUP, candidates)
    assert status.is_success()
    # a: cpu 1/5 (20), memory 1000/5000 (20); b: cpu 1/10 (10), memory 10. Times 2.
    assert totals == [40, 20]


PLACEMENT_TIES = [
    # (id, pods placed per rack, PodGroupPodsCount + NodeResourcesFit totals)
    # Both racks take both pods: PodGroupPodsCount ties (100 each); the fuller rack wins.
    ("pods-count-ties-bin-packing-decides", {"a": 2, "b": 2}, [100 + 60, 100 + 30]),
    # The bigger rack takes one pod more: 66 against 100; bin packing cannot make up
    # for it (a: 60, b: 45 with three pods on its four nodes).
    ("more-pods-outweigh-bin-packing", {"a": 2, "b": 3}, [66 + 60, 100 + 45]),
]


@pytest.mark.parametrize(
    ("counts", "totals"), [c[1:] for c in PLACEMENT_TIES], ids=[c[0] for c in PLACEMENT_TIES]
)
def test_with_pod_group_pods_count_as_in_the_default_profile(counts, totals):
    # Rack a: two 5-CPU nodes; rack b: four. Each pod asks 3 CPUs and 3000 bytes.
    nodes = [node("a0"), node("a1"), *(node(f"b{i}") for i in range(4))]
    fw = make_framework(NodeResourcesFit, PodGroupPodsCount, lister=StaticLister([GROUP]))
    snapshot = new_snapshot([], nodes)
    fw.set_snapshot(snapshot)
    racks = {"a": ["a0", "a1"], "b": ["b0", "b1", "b2", "b3"]}
    placed = {
        rack: [
            (_group_pod(f"{rack}-{i}"), racks[rack][i % len(racks[rack])])
            for i in range(counts[rack])
        ]
        for rack in racks
    }
    totals_, status = fw.run_placement_score_plugins(
        CycleState(), GROUP, _candidates(snapshot, racks, placed)
    )
    assert status.is_success()
    assert totals_ == totals


def _group_pod(name: str) -> Pod:
    manifest = make_pod(name).uid(name).container({"cpu": "3", "memory": "3000"}).manifest()
    manifest["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    return parse_object(manifest)


TOPOLOGY_GATES = "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"

PROFILE_CASES = [
    # (id, the profile's plugins, PlacementScore as (plugin, weight))
    ("default-profile", {}, [("NodeResourcesFit", 1), ("PodGroupPodsCount", 1)]),
    (
        # The weights of upstream's topology-aware scheduling docs example.
        "placement-score-weights",
        {
            "placementScore": {
                "enabled": [
                    {"name": "NodeResourcesFit", "weight": 2},
                    {"name": "PodGroupPodsCount", "weight": 5},
                ]
            }
        },
        [("NodeResourcesFit", 2), ("PodGroupPodsCount", 5)],
    ),
    (
        "multi-point-weight",
        {"multiPoint": {"enabled": [{"name": "NodeResourcesFit", "weight": 3}]}},
        [("NodeResourcesFit", 3), ("PodGroupPodsCount", 1)],
    ),
    (
        "disabled-at-placement-score",
        {"placementScore": {"disabled": [{"name": "NodeResourcesFit"}]}},
        [("PodGroupPodsCount", 1)],
    ),
]


@pytest.mark.parametrize(
    ("plugins", "expected"), [c[1:] for c in PROFILE_CASES], ids=[c[0] for c in PROFILE_CASES]
)
def test_placement_score_in_the_profile(plugins, expected):
    registry = default_registry()
    gates = parse_feature_gates([TOPOLOGY_GATES])
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}],
    }
    config = config_from_dict(raw, registry, gates=gates)
    (profile,) = effective_configuration(config, registry, gates=gates).profiles
    assert [(p.name, p.weight) for p in profile.plugins["PlacementScore"]] == expected
