"""The bench workloads build the stated objects: counts, shapes, determinism."""

from __future__ import annotations

from collections import Counter

import pytest

from kubesched.api import Node, Pod, PriorityClass, parse_object
from kubesched.bench import (
    WORKLOADS,
    bench_configuration,
    build_workload,
    expected_unschedulable,
    workloads,
)
from kubesched.bench.kube import _manifests
from kubesched.bench.workloads import (
    CHURN_PRIORITIES,
    CHURN_ROUNDS,
    CHURN_RUNNING_PER_NODE,
    GANG_SIZE,
    LOW_PRIORITY_PODS_PER_NODE,
    ZONES,
    ParsedOnDemand,
    anti_affinity_group_size,
    pod_manifest,
    unschedulable_count,
)
from kubesched.framework.registry import default_registry
from kubesched.simulate.driver import Simulation


def _requests(pod: Pod) -> dict[str, str]:
    (container,) = pod.spec.containers
    return {k: str(v) for k, v in container.resources.requests.items()}


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_counts_and_nodes(name: str) -> None:
    w = build_workload(name, 12, 30, seed=1)
    assert w.name == name
    assert len(w.nodes) == 12
    assert len(w.pods) == 30
    assert all(isinstance(n, Node) for n in w.nodes)
    assert all(isinstance(p, Pod) and not p.spec.node_name for p in w.pods)
    node = w.nodes[0]
    assert {k: str(v) for k, v in node.status.allocatable.items()} == {
        "cpu": "4",
        "memory": "32Gi",
        "pods": "110",
    }
    zones = Counter(n.metadata.labels["topology.kubernetes.io/zone"] for n in w.nodes)
    assert set(zones) == set(ZONES) and len(ZONES) >= 3
    assert max(zones.values()) - min(zones.values()) <= 1
    assert all(n.metadata.labels["kubernetes.io/hostname"] == n.metadata.name for n in w.nodes)
    uids = [o.metadata.uid for o in w.objects() if o.kind in ("Pod", "Node")]
    assert len(uids) == len(set(uids))
    assert w.expected_unschedulable == expected_unschedulable(name, 12, 30)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_deterministic_by_seed(name: str) -> None:
    def dump(seed: int) -> list[dict]:
        return [o.model_dump() for o in build_workload(name, 8, 20, seed).objects()]

    assert dump(3) == dump(3)


def test_unknown_workload() -> None:
    with pytest.raises(ValueError, match="unknown workload"):
        build_workload("nope", 1, 1)


def test_basic_shape() -> None:
    w = build_workload("basic", 5, 7)
    for pod in w.pods:
        assert _requests(pod) == {"cpu": "100m", "memory": "500Mi"}
        assert pod.spec.affinity is None and not pod.spec.topology_spread_constraints


def test_pod_anti_affinity_groups() -> None:
    w = build_workload("pod-anti-affinity", 10, 23, seed=4)
    size = anti_affinity_group_size(10)
    assert size == 5
    groups = Counter(p.metadata.labels["group"] for p in w.pods)
    assert max(groups.values()) <= size <= 10
    for pod in w.pods:
        assert pod.metadata.namespace == "sched-1"
        assert pod.metadata.labels["color"] == "green"
        (term,) = (
            pod.spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution
        )
        assert term.topology_key == "kubernetes.io/hostname"
        assert term.label_selector.match_labels == {
            "color": "green",
            "group": pod.metadata.labels["group"],
        }
    # The seed interleaves the groups.
    order = [p.metadata.name for p in w.pods]
    assert order != sorted(order, key=lambda n: int(n.rsplit("-", 1)[1]))
    other = [p.metadata.name for p in build_workload("pod-anti-affinity", 10, 23, seed=5).pods]
    assert other != order


def test_topology_spread_shape() -> None:
    for pod in build_workload("topology-spread", 6, 9).pods:
        (c,) = pod.spec.topology_spread_constraints
        assert (c.max_skew, c.topology_key, c.when_unsatisfiable) == (
            5,
            "topology.kubernetes.io/zone",
            "DoNotSchedule",
        )
        assert c.label_selector.match_labels == {"color": "blue"}
        assert pod.metadata.labels == {"color": "blue"}


def test_preferred_affinity_shape() -> None:
    for pod in build_workload("preferred-affinity", 6, 9).pods:
        (t,) = pod.spec.affinity.pod_affinity.preferred_during_scheduling_ignored_during_execution
        assert t.weight == 1
        assert t.pod_affinity_term.topology_key == "kubernetes.io/hostname"
        assert t.pod_affinity_term.label_selector.match_labels == {"color": "red"}


def test_unschedulable_share() -> None:
    w = build_workload("unschedulable", 10, 50, seed=2)
    large = [p for p in w.pods if _requests(p)["cpu"] == "9"]
    assert len(large) == unschedulable_count(50) == 5 == w.expected_unschedulable
    assert all(_requests(p)["cpu"] == "100m" for p in w.pods if p not in large)
    picked = {p.metadata.name for p in large}
    other = {
        p.metadata.name
        for p in build_workload("unschedulable", 10, 50, seed=3).pods
        if _requests(p)["cpu"] == "9"
    }
    assert picked != other


@pytest.mark.parametrize(
    ("name", "low_labels", "anti_affinity"),
    [("preemption", None, False), ("preemption-anti-affinity", {"tier": "low"}, True)],
    ids=["preemption", "preemption-anti-affinity"],
)
def test_preemption_shape(name: str, low_labels: dict | None, anti_affinity: bool) -> None:
    w = build_workload(name, 4, 6)
    classes = [o for o in w.setup if isinstance(o, PriorityClass)]
    assert [(c.metadata.name, c.value) for c in classes] == [("bench-high", 10)]
    low = [o for o in w.setup if isinstance(o, Pod)]
    assert len(low) == 4 * LOW_PRIORITY_PODS_PER_NODE
    assert Counter(p.spec.node_name for p in low) == {f"node-{i}": 4 for i in range(4)}
    assert all(_requests(p)["cpu"] == "900m" for p in low)
    assert all(p.spec.termination_grace_period_seconds == 0 for p in low)
    assert all((p.metadata.labels or None) == low_labels for p in low)
    for pod in w.pods:
        assert pod.spec.priority_class_name == "bench-high"
        assert _requests(pod)["cpu"] == "3000m"
        terms = pod.spec.affinity.pod_anti_affinity if pod.spec.affinity else None
        if anti_affinity:
            (term,) = terms.required_during_scheduling_ignored_during_execution
            assert term.topology_key == "kubernetes.io/hostname"
            assert term.label_selector.match_labels == {"tier": "low"}
        else:
            assert terms is None
    assert w.expected_unschedulable == 2


def test_churn_rounds_and_deletions() -> None:
    w = build_workload("churn", 10, 23, seed=2)
    assert len(w.churn) == CHURN_ROUNDS - 1
    later = [p for step in w.churn for p in step.create]
    first = [o for o in w.objects() if isinstance(o, Pod) and o.metadata.name.startswith("churn")]
    # Every measured pod arrives exactly once: in the initial objects or in one step.
    assert sorted(p.metadata.name for p in first + later) == sorted(p.metadata.name for p in w.pods)
    assert len(first) == 5  # ceil(23 / 5)
    running = [o for o in w.setup if isinstance(o, Pod)]
    assert len(running) == 10 * CHURN_RUNNING_PER_NODE
    deleted = [name for step in w.churn for _, name in step.delete]
    assert len(deleted) == len(set(deleted)) > 0
    assert set(deleted) <= {p.metadata.name for p in running}
    priorities = Counter(p.spec.priority_class_name for p in w.pods)
    assert set(priorities) == {name for name, _ in CHURN_PRIORITIES}
    assert {o.metadata.name for o in w.setup if isinstance(o, PriorityClass)} == set(priorities)


def test_churn_run_deletes_while_pods_arrive() -> None:
    w = build_workload("churn", 6, 20, seed=0)
    registry = default_registry()
    sim = Simulation(w.objects(), config=bench_configuration(registry), registry=registry)
    run = w.run(sim)
    names = {p.metadata.name: p.spec.node_name for p in run.cluster.pods()}
    assert all(names.get(p.metadata.name) for p in w.pods)
    assert not {name for step in w.churn for _, name in step.delete} & set(names)


def test_gang_groups_and_profile() -> None:
    w = build_workload("gang", 5, 23, seed=4)
    groups = Counter(p.metadata.labels["scheduling.x-k8s.io/pod-group"] for p in w.pods)
    assert sorted(groups.values()) == [3, GANG_SIZE, GANG_SIZE]
    min_member = {o.metadata.name: o.spec.min_member for o in w.setup if o.kind == "PodGroup"}
    assert min_member == dict(groups)
    config = bench_configuration(default_registry(), plugins=WORKLOADS["gang"].plugins)
    (profile,) = config.profiles
    assert profile.plugin_names("QueueSort") == ["Coscheduling"]
    assert "Coscheduling" in profile.plugin_names("Permit")


def test_manifests_for_the_api_server_leave_out_empty_lists() -> None:
    """What ``bench --kubeconfig`` POSTs: no empty list (the API server refuses a
    template's ``spec.metadata.ownerReferences: []``), empty maps kept."""
    workload = build_workload("dra", 2, 4, 0)
    manifests = _manifests([*workload.setup, *workload.pods])

    def lists(value: object) -> list[list]:
        if isinstance(value, dict):
            return [x for v in value.values() for x in lists(v)]
        if isinstance(value, list):
            return [value, *(x for v in value for x in lists(v))]
        return []

    assert all(lst for m in manifests for lst in lists(m))
    templates = [m for m in manifests if m["kind"] == "ResourceClaimTemplate"]
    assert templates and all("ownerReferences" not in t["spec"]["metadata"] for t in templates)
    assert (
        _manifests([Pod.model_validate({"metadata": {"name": "p", "labels": {}}})])[0]["metadata"][
            "labels"
        ]
        == {}
    )


def test_parsed_on_demand_parses_what_is_asked_for_once() -> None:
    asked: list[int] = []

    def manifests():
        for i in range(4):
            asked.append(i)
            yield pod_manifest(f"pod-{i}")

    pods = ParsedOnDemand(manifests())
    assert asked == []
    first, second = iter(pods), iter(pods)
    a = next(first)
    assert asked == [0] and next(second) is a  # the second iterator reads the kept model
    b = next(second)
    assert asked == [0, 1] and next(first) is b
    assert pods[1] is b and asked == [0, 1, 2, 3]  # indexing parses the rest
    assert [p.metadata.name for p in pods] == [f"pod-{i}" for i in range(4)]
    assert len(pods) == 4 and [p.metadata.name for p in pods[2:]] == ["pod-2", "pod-3"]
    assert list(first) == list(pods[2:]) and asked == [0, 1, 2, 3]


def test_bench_simulation_admits_each_pod_before_parsing_the_next(monkeypatch) -> None:
    # The point of parsing on demand: a pod's duplicates are shared by admission before
    # the next pod exists, so the models never all exist at once as parsed.
    nodes = build_workload("basic", 2, 0).nodes
    parsed: list[Pod] = []

    def recording(manifest):
        model = parse_object(manifest)
        parsed.append(model)
        return model

    monkeypatch.setattr(workloads, "parse_object", recording)
    admitted_when_asked: list[list[bool]] = []

    def manifests():
        for i in range(3):
            admitted_when_asked.append([p.metadata.resource_version is not None for p in parsed])
            yield pod_manifest(f"pod-{i}")

    w = workloads.Workload("basic", nodes, ParsedOnDemand(manifests()))
    registry = default_registry()
    sim = w.simulation(bench_configuration(registry, None, None), registry)
    assert admitted_when_asked == [[], [True], [True, True]]
    stored = sim.cluster.pods()
    assert [p.metadata.name for p in stored] == ["pod-0", "pod-1", "pod-2"]
    assert all(s is p for s, p in zip(stored, w.pods, strict=True))  # handed over, not copied
    assert stored[0].spec is stored[2].spec  # equal specs shared by admission
    assert sum(1 for p in w.run(sim).cluster.pods() if p.spec.node_name) == 3
