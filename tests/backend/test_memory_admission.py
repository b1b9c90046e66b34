"""Pod admission of the embedded cluster: priority, runtime class, defaults, affinity keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched.api import Pod, Quantity, load_manifests, parse_object
from kubesched.backend import PodCondition
from kubesched.backend.memory import AdmissionError, MemoryCluster
from kubesched.clock import FakeClock

from .helpers import obj, pod

HIGH = obj("PriorityClass", "high", value=1000)
NEVER = obj("PriorityClass", "batch", value=500, preemptionPolicy="Never")
DEFAULT = obj("PriorityClass", "default-pc", value=7, globalDefault=True)
DEFAULT_LOW = obj("PriorityClass", "default-low", value=3, globalDefault=True)
KATA = obj(
    "RuntimeClass",
    "kata-fc",
    handler="kata-fc",
    overhead={"podFixed": {"memory": "120Mi", "cpu": "250m"}},
)
SEED = Path(__file__).resolve().parent.parent / "fixtures" / "k8s-docs"
GVISOR = obj(
    "RuntimeClass",
    "gvisor",
    handler="runsc",
    scheduling={
        "nodeSelector": {"sandbox": "gvisor"},
        "tolerations": [{"key": "sandbox", "operator": "Exists"}],
    },
)


@pytest.mark.parametrize(
    ("classes", "spec", "want"),
    [
        ([], {}, (0, None, "PreemptLowerPriority")),
        ([HIGH], {"priorityClassName": "high"}, (1000, "high", "PreemptLowerPriority")),
        ([NEVER], {"priorityClassName": "batch"}, (500, "batch", "Never")),
        ([HIGH, DEFAULT], {}, (7, "default-pc", "PreemptLowerPriority")),
        ([HIGH, DEFAULT], {"priorityClassName": "high"}, (1000, "high", "PreemptLowerPriority")),
        (
            [],
            {"priorityClassName": "system-node-critical"},
            (2000001000, "system-node-critical", "PreemptLowerPriority"),
        ),
        (
            [],
            {"priorityClassName": "system-cluster-critical"},
            (2000000000, "system-cluster-critical", "PreemptLowerPriority"),
        ),
        (
            [HIGH],
            {"priorityClassName": "high", "priority": 1000},
            (1000, "high", "PreemptLowerPriority"),
        ),
    ],
    ids=[
        "no-class-priority-0",
        "class-value",
        "class-preemption-policy-never",
        "global-default",
        "explicit-class-beats-default",
        "system-node-critical",
        "system-cluster-critical",
        "matching-explicit-priority",
    ],
)
def test_priority_admission(
    cluster: MemoryCluster, classes: list, spec: dict[str, Any], want: tuple
):
    cluster.apply(classes)
    p: Pod = cluster.create(pod("p", **spec))
    assert (p.spec.priority, p.spec.priority_class_name, p.spec.preemption_policy) == want


@pytest.mark.parametrize(
    ("classes", "spec", "message"),
    [
        (
            [],
            {"priorityClassName": "nope"},
            'pods "p" is forbidden: no PriorityClass with name nope was found',
        ),
        (
            [],
            {"priority": 5},
            'pods "p" is forbidden: the integer value of priority (5) must not be provided in pod '
            "spec; priority admission controller computed 0 from the given PriorityClass name",
        ),
        (
            [NEVER],
            {"priorityClassName": "batch", "preemptionPolicy": "PreemptLowerPriority"},
            'pods "p" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) '
            "must not be provided in pod spec; priority admission controller computed Never from "
            "the given PriorityClass name",
        ),
        (
            [],
            {"runtimeClassName": "missing"},
            'pods "p" is forbidden: pod rejected: RuntimeClass "missing" not found',
        ),
        (
            [KATA],
            {"runtimeClassName": "kata-fc", "overhead": {"cpu": "1"}},
            "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
        ),
        (
            [],
            {"overhead": {"cpu": "1"}},
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
        ),
        (
            [GVISOR],
            {"runtimeClassName": "gvisor", "nodeSelector": {"sandbox": "kata"}},
            "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; "
            "pod.spec.nodeSelector[sandbox] = kata",
        ),
    ],
    ids=[
        "unknown-priority-class",
        "explicit-priority-without-class",
        "conflicting-preemption-policy",
        "unknown-runtime-class",
        "overhead-mismatch",
        "overhead-without-runtime-class",
        "runtime-class-node-selector-conflict",
    ],
)
def test_admission_rejections(
    cluster: MemoryCluster, classes: list, spec: dict[str, Any], message: str
):
    cluster.apply(classes)
    with pytest.raises(AdmissionError) as err:
        cluster.create(pod("p", **spec))
    assert err.value.code == 403
    assert message in str(err.value)
    assert cluster.try_get("Pod", "default", "p") is None


def test_lenient_admission_keeps_explicit_priority_and_overhead():
    cluster = MemoryCluster(FakeClock(), lenient_admission=True)
    p: Pod = cluster.create(pod("p", priority=5, overhead={"cpu": "1"}))
    assert p.spec.priority == 5
    assert p.spec.overhead == {"cpu": Quantity("1")}


def test_only_one_global_default(cluster: MemoryCluster):
    rejected = cluster.apply([DEFAULT, DEFAULT_LOW])
    assert [r.message for r in rejected] == [
        'priorityclasses.scheduling.k8s.io "default-low" is forbidden: PriorityClass '
        "default-pc is already marked as default. Only one default can exist"
    ]


def test_new_global_default_does_not_change_existing_pods(cluster: MemoryCluster):
    cluster.create(pod("before"))
    cluster.create(DEFAULT)
    cluster.create(pod("after"))
    assert cluster.get("Pod", "default", "before").spec.priority == 0
    assert cluster.get("Pod", "default", "after").spec.priority == 7


def test_seed_002_runtime_class_overhead(cluster: MemoryCluster):
    """The pod-overhead example of the Kubernetes docs: kata-fc adds 250m CPU and 120Mi memory."""
    rejected = cluster.apply(
        load_manifests([SEED / "pod-overhead-test-pod.yaml", SEED / "runtimeclass-kata-fc.yaml"])
    )
    assert rejected == []
    p: Pod = cluster.get("Pod", "default", "test-pod")
    assert p.spec.overhead == {"cpu": Quantity("250m"), "memory": Quantity("120Mi")}


def test_seed_002_priority_class(cluster: MemoryCluster):
    """The priority example of the Kubernetes docs: nginx gets 1000000 from high-priority."""
    rejected = cluster.apply(
        load_manifests(
            [SEED / "pod-with-priority-class.yaml", SEED / "priorityclass-high-priority.yaml"]
        )
    )
    assert rejected == []
    assert cluster.get("Pod", "default", "nginx").spec.priority == 1000000


def test_runtime_class_overhead_equal_to_the_pods_is_accepted(cluster: MemoryCluster):
    cluster.create(KATA)
    p = cluster.create(
        pod("p", runtimeClassName="kata-fc", overhead={"cpu": "250m", "memory": "120Mi"})
    )
    assert p.spec.overhead == {"cpu": Quantity("250m"), "memory": Quantity("120Mi")}


def test_runtime_class_scheduling_merges_selector_and_tolerations(cluster: MemoryCluster):
    cluster.create(GVISOR)
    p: Pod = cluster.create(pod("p", runtimeClassName="gvisor", nodeSelector={"zone": "a"}))
    assert p.spec.node_selector == {"zone": "a", "sandbox": "gvisor"}
    assert any(t.key == "sandbox" for t in p.spec.tolerations)


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ({}, "default-scheduler"),
        ({"schedulerName": ""}, "default-scheduler"),
        ({"schedulerName": "mine"}, "mine"),
    ],
    ids=["unset", "empty", "explicit"],
)
def test_scheduler_name_default(cluster: MemoryCluster, spec: dict[str, Any], want: str):
    assert cluster.create(pod("p", **spec)).spec.scheduler_name == want


@pytest.mark.parametrize(
    ("tolerations", "added"),
    [
        ([], ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]),
        (
            [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}],
            ["node.kubernetes.io/unreachable"],
        ),
        ([{"operator": "Exists"}], []),
    ],
    ids=["both-added", "one-present", "tolerate-everything"],
)
def test_default_toleration_seconds(cluster: MemoryCluster, tolerations: list, added: list[str]):
    p: Pod = cluster.create(pod("p", tolerations=tolerations))
    new = p.spec.tolerations[len(tolerations) :]
    assert [t.key for t in new] == added
    assert all(t.toleration_seconds == 300 and t.effect == "NoExecute" for t in new)


def test_admitted_tolerations_are_shared_and_never_leak_between_pods(cluster: MemoryCluster):
    # The defaults admission adds are one instance per toleration for every pod: binding,
    # status updates and a deep copy changed by its owner leave the other pods' alone.
    def create(name: str) -> Pod:
        limited = {"name": "c", "image": "i", "resources": {"limits": {"cpu": "1"}}}
        return cluster.create(pod(name, containers=[limited]))  # not BestEffort: 3 defaults

    cluster.create(obj("Node", "n1"))
    a, b = create("a"), create("b")
    assert len(a.spec.tolerations) == 3
    assert all(x is y for x, y in zip(a.spec.tolerations, b.spec.tolerations, strict=True))
    before = [t.model_dump() for t in b.spec.tolerations]
    cluster.bind(a, "n1")
    cluster.update_pod_status(b, condition=PodCondition("PodScheduled", "False", "Unschedulable"))
    changed = cluster.get("Pod", "default", "a").model_copy(deep=True)
    changed.spec.tolerations[0].toleration_seconds = 1
    changed.spec.tolerations[1].toleration_seconds = 2
    cluster.update(changed)
    a_now = cluster.get("Pod", "default", "a").spec.tolerations
    assert (a_now[0].toleration_seconds, a_now[1].toleration_seconds) == (1, 2)
    assert [t.model_dump() for t in cluster.get("Pod", "default", "b").spec.tolerations] == before
    assert [t.model_dump() for t in create("c").spec.tolerations] == before


@pytest.mark.parametrize(
    ("second", "shared"),
    [
        ({"name": "c", "image": "i"}, True),
        ({"name": "c", "image": "other"}, False),
        ({"name": "d", "image": "i"}, False),
    ],
    ids=["equal-container-shared", "other-image-own", "other-name-own"],
)
def test_equal_containers_of_consecutive_pods_are_shared(
    cluster: MemoryCluster, second: dict, shared: bool
):
    cluster.create(obj("Node", "n1"))
    a = cluster.create(pod("a", containers=[{"name": "c", "image": "i"}]))
    b = cluster.create(pod("b", containers=[second]))
    assert (a.spec.containers[0] is b.spec.containers[0]) is shared
    assert b.spec.containers[0].model_dump(exclude_unset=True) == second
    # A writer copies the pod before changing it: the other pod's container stays.
    changed = a.model_copy(deep=True)
    changed.spec.containers[0].image = "new"
    cluster.update(changed)
    assert cluster.get("Pod", "default", "b").spec.containers[0].image == second["image"]
    assert cluster.get("Pod", "default", "a").spec.containers[0].image == "new"


@pytest.mark.parametrize(
    ("second", "spec_shared", "container_shared"),
    [
        ({}, True, True),
        ({"priorityClassName": "system-node-critical"}, False, True),
        ({"containers": [{"name": "c", "image": "other"}]}, False, False),
        ({"nodeSelector": {}}, True, True),
    ],
    ids=["equal-spec-shared", "other-priority-own-spec", "other-container-own", "empty-selector"],
)
def test_equal_specs_of_consecutive_pods_are_shared(
    cluster: MemoryCluster, second: dict, spec_shared: bool, container_shared: bool
):
    cluster.create(obj("Node", "n1"))
    a, b = cluster.create(pod("a")), cluster.create(pod("b", **second))
    assert (a.spec is b.spec) is spec_shared
    assert (a.spec.containers[0] is b.spec.containers[0]) is container_shared
    assert b.spec.model_dump() == cluster.admission.admit(pod("b", **second)).spec.model_dump()
    # Binding one, changing its image (a writer copies first) leave the other's spec.
    cluster.bind(a, "n1")
    changed = cluster.get("Pod", "default", "a").model_copy(deep=True)
    changed.spec.containers[0].image = "new"
    cluster.update(changed)
    a, b = cluster.get("Pod", "default", "a"), cluster.get("Pod", "default", "b")
    assert (a.spec.node_name, a.spec.containers[0].image) == ("n1", "new")
    assert b.spec.node_name is None
    assert b.spec.containers[0].image == ("other" if "containers" in second else "busybox")


def test_a_pod_after_a_different_one_shares_nothing_with_the_earlier_twin(cluster: MemoryCluster):
    # Only the previous admitted pod's spec is shared: a, c are equal but b came between.
    a = cluster.create(pod("a"))
    b = cluster.create(pod("b", containers=[{"name": "c", "image": "other"}]))
    c = cluster.create(pod("c"))
    assert a.spec is not c.spec and b.spec is not c.spec
    assert a.spec == c.spec


def test_default_toleration_seconds_can_be_disabled():
    cluster = MemoryCluster(FakeClock(), default_toleration_seconds=False)
    assert cluster.create(pod("p")).spec.tolerations == []


TSC_MERGE_CASES = [
    # (id, pod labels, matchLabelKeys, the selector's requirements once admitted)
    ("key-the-pod-has", {"app": "web", "rev": "2"}, ["rev"], [("rev", "In", ["2"])]),
    ("key-the-pod-lacks", {"app": "web"}, ["rev"], []),
    (
        "several-keys-in-order",
        {"app": "web", "rev": "2", "track": "canary"},
        ["track", "rev"],
        [("track", "In", ["canary"]), ("rev", "In", ["2"])],
    ),
    ("no-keys", {"app": "web", "rev": "2"}, [], []),
]


@pytest.mark.parametrize(
    ("labels", "keys", "want"),
    [c[1:] for c in TSC_MERGE_CASES],
    ids=[c[0] for c in TSC_MERGE_CASES],
)
def test_match_label_keys_merge_into_topology_spread_selectors(
    cluster: MemoryCluster, labels: dict[str, str], keys: list[str], want: list
):
    """kube-apiserver v1.36 (MatchLabelKeysInPodTopologySpreadSelectorMerge, on by
    default) appends an ``In`` requirement per key the pod has; matchLabels stay."""
    constraint = {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "matchLabelKeys": keys,
    }
    p: Pod = cluster.create(pod("p", labels=labels, topologySpreadConstraints=[constraint]))
    selector = p.spec.topology_spread_constraints[0].label_selector
    assert selector is not None and selector.match_labels == {"app": "web"}
    got = [(e.key, e.operator, e.values) for e in selector.match_expressions or []]
    assert got == want


def test_match_label_keys_merge_into_pod_affinity_selectors(cluster: MemoryCluster):
    term = {
        "labelSelector": {"matchLabels": {"app": "web"}},
        "topologyKey": "zone",
        "matchLabelKeys": ["version", "absent"],
        "mismatchLabelKeys": ["tenant"],
    }
    nil_selector_term = {"topologyKey": "zone", "matchLabelKeys": ["version"]}
    # kube-apiserver refuses matchLabelKeys without a selector before admission runs;
    # admission alone must still leave such a term matching nothing.
    cluster.validate = False
    p: Pod = cluster.create(
        pod(
            "p",
            validate=False,
            labels={"app": "web", "version": "v2", "tenant": "t1"},
            affinity={
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]},
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 10, "podAffinityTerm": term}
                    ],
                    "requiredDuringSchedulingIgnoredDuringExecution": [nil_selector_term],
                },
            },
        )
    )
    aff = p.spec.affinity
    assert aff is not None and aff.pod_affinity is not None and aff.pod_anti_affinity is not None
    want = [("version", "In", ["v2"]), ("tenant", "NotIn", ["t1"])]
    req = aff.pod_affinity.required_during_scheduling_ignored_during_execution[0]
    pref = aff.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution[0]
    for t in (req, pref.pod_affinity_term):
        assert t.label_selector is not None
        got = [(e.key, e.operator, e.values) for e in t.label_selector.match_expressions or []]
        assert got == want
    anti = aff.pod_anti_affinity.required_during_scheduling_ignored_during_execution[0]
    assert anti.label_selector is None


def test_admission_does_not_touch_the_callers_pod(cluster: MemoryCluster):
    cluster.create(HIGH)
    p = pod("p", priorityClassName="high")
    cluster.create(p)
    assert p.spec.priority is None


@pytest.mark.parametrize(
    ("resources", "tolerations", "added"),
    [
        ({}, [], False),
        ({"requests": {"cpu": "100m"}}, [], True),
        ({"limits": {"memory": "1Gi"}}, [], True),
        ({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}, [], False),
        (
            {"requests": {"cpu": "1"}},
            [{"key": "node.kubernetes.io/memory-pressure", "operator": "Exists"}],
            False,
        ),
        ({"requests": {"cpu": "1"}}, [{"operator": "Exists"}], False),
    ],
    ids=[
        "best-effort",
        "burstable",
        "guaranteed-by-limits",
        "extended-only-is-best-effort",
        "already-tolerated",
        "tolerates-everything",
    ],
)
def test_memory_pressure_toleration_for_non_best_effort(
    cluster: MemoryCluster, resources: dict, tolerations: list, added: bool
) -> None:
    # The Kubernetes docs: the control plane adds the memory-pressure toleration to pods whose QoS
    # class is not BestEffort.
    p = cluster.create(
        parse_object(
            {
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {
                    "tolerations": tolerations,
                    "containers": [{"name": "c", "image": "busybox", "resources": resources}],
                },
            }
        )
    )
    mine = [t for t in p.spec.tolerations if t.key == "node.kubernetes.io/memory-pressure"]
    want = [("node.kubernetes.io/memory-pressure", "Exists", "NoSchedule")] if added else []
    if not added and tolerations and tolerations[0].get("key"):
        want = [("node.kubernetes.io/memory-pressure", "Exists", None)]
    assert [(t.key, t.operator, t.effect) for t in mine] == want
