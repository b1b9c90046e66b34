"""DefaultEvictor's filters, with cases from the descheduler's defaultevictor tests."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.deschedule import DeschedulerHandle
from kubesched.simulate.driver import Simulation
from kubesched_builtin.descheduler import defaultevictor as de

from .conftest import node, pod, replicaset

CASES: list[tuple[str, dict[str, Any], dict[str, Any], str | None]] = [
    ("owned-running", {}, {}, None),
    ("no-owner", {"owner": None}, {}, de.ERR_NO_OWNER),
    (
        "failed-bare-not-allowed",
        {"owner": None, "status": {"phase": "Failed"}},
        {},
        de.ERR_NO_OWNER,
    ),
    (
        "failed-bare-allowed",
        {"owner": None, "status": {"phase": "Failed"}},
        {"evictFailedBarePods": True},
        None,
    ),
    ("daemonset", {"owner_kind": "DaemonSet"}, {}, de.ERR_DAEMONSET),
    ("daemonset-allowed", {"owner_kind": "DaemonSet"}, {"evictDaemonSetPods": True}, None),
    ("mirror", {"annotations": {de.MIRROR_ANNOTATION: "x"}}, {}, de.ERR_MIRROR),
    ("static", {"annotations": {de.SOURCE_ANNOTATION: "file"}}, {}, de.ERR_STATIC),
    ("critical", {"priorityClassName": "system-cluster-critical"}, {}, de.ERR_CRITICAL),
    (
        "critical-allowed",
        {"priorityClassName": "system-node-critical"},
        {"evictSystemCriticalPods": True},
        None,
    ),
    ("below-threshold", {"priorityClassName": "p99"}, {"priorityThreshold": {"value": 100}}, None),
    (
        "at-threshold",
        {"priorityClassName": "p100"},
        {"priorityThreshold": {"value": 100}},
        de.ERR_PRIORITY,
    ),
    (
        "threshold-by-class",
        {"priorityClassName": "high"},
        {"priorityThreshold": {"name": "high"}},
        de.ERR_PRIORITY,
    ),
    (
        "empty-dir",
        {"volumes": [{"name": "v", "emptyDir": {}}]},
        {},
        de.ERR_LOCAL_STORAGE,
    ),
    (
        "host-path",
        {"volumes": [{"name": "v", "hostPath": {"path": "/x"}}]},
        {},
        de.ERR_LOCAL_STORAGE,
    ),
    (
        "empty-dir-allowed",
        {"volumes": [{"name": "v", "emptyDir": {}}]},
        {"evictLocalStoragePods": True},
        None,
    ),
    (
        "pvc-ignored",
        {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]},
        {"ignorePvcPods": True},
        de.ERR_PVC,
    ),
    (
        "pvc-default",
        {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]},
        {},
        None,
    ),
    (
        "annotation-overrides",
        {
            "owner": None,
            "annotations": {de.EVICT_ANNOTATION: "true"},
            "priorityClassName": "system-cluster-critical",
        },
        {},
        None,
    ),
    (
        "label-selector-miss",
        {},
        {"labelSelector": {"matchLabels": {"tier": "web"}}},
        de.ERR_LABELS,
    ),
    (
        "label-selector-hit",
        {"labels": {"tier": "web"}},
        {"labelSelector": {"matchLabels": {"tier": "web"}}},
        None,
    ),
    (
        "protections-extra-pvc",
        {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]},
        {"podProtections": {"extraEnabled": ["PodsWithPVC"]}},
        de.ERR_PVC,
    ),
    (
        "protections-default-disabled-daemonset",
        {"owner_kind": "DaemonSet"},
        {"podProtections": {"defaultDisabled": ["DaemonSetPods"]}},
        None,
    ),
    (
        "protections-default-disabled-local-storage",
        {"volumes": [{"name": "v", "emptyDir": {}}]},
        {"podProtections": {"defaultDisabled": ["PodsWithLocalStorage"]}},
        None,
    ),
    (
        "protections-default-disabled-system-critical",
        {"priorityClassName": "system-node-critical"},
        {"podProtections": {"defaultDisabled": ["SystemCriticalPods"]}},
        None,
    ),
    (
        "protections-extra-resource-claims",
        {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]},
        {"podProtections": {"extraEnabled": ["PodsWithResourceClaims"]}},
        de.ERR_RESOURCE_CLAIMS,
    ),
    (
        "resource-claims-not-protected-by-default",
        {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]},
        {},
        None,
    ),
    ("min-replicas", {}, {"minReplicas": 3}, de.ERR_MIN_REPLICAS % (2, 3)),
    ("min-replicas-met", {}, {"minReplicas": 2}, None),
    ("min-pod-age", {}, {"minPodAge": "1h"}, de.ERR_MIN_AGE % "1h0m0s"),
    ("min-pod-age-message", {}, {"minPodAge": "90m"}, de.ERR_MIN_AGE % "1h30m0s"),
    (
        "old-enough",
        {"status": {"phase": "Running", "startTime": "2025-12-31T00:00:00Z"}},
        {"minPodAge": "1h"},
        None,
    ),
    (
        # minPodAge counts from status.startTime, not from creation.
        "created-long-ago-started-now",
        {"creationTimestamp": "2025-12-31T00:00:00Z"},
        {"minPodAge": "1h"},
        de.ERR_MIN_AGE % "1h0m0s",
    ),
]


@pytest.mark.parametrize(
    ("podkw", "args", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_filter(podkw: dict[str, Any], args: dict[str, Any], want: str | None) -> None:
    kw = {"owner": ("app", 1), **podkw}
    target = pod("target", "n1", **kw)
    sibling = pod("sibling", "n1", owner=("app", 1))
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}
    objects = [
        node("n1"),
        replicaset("app", 2, 1),
        *(
            parse_object({**high, "metadata": {"name": name}, "value": value})
            for name, value in (("high", 1000), ("p99", 99), ("p100", 100))
        ),
        target,
        sibling,
    ]
    sim = Simulation(objects)
    try:
        handle = DeschedulerHandle(sim.cluster)
        evictor = de.DefaultEvictor(de.Args.model_validate(args), handle)
        stored = sim.cluster.get("Pod", "default", "target")
        assert evictor.filter(stored) == want
    finally:
        sim.close()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1h", 3600.0), ("1h30m", 5400.0), ("90s", 90.0), ("1.5h", 5400.0), ("250ms", 0.25)],
    ids=["hour", "compound", "seconds", "fraction", "millis"],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert de.parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text", ["", "1d", "h", "5", "1h x"], ids=["empty", "days", "no-number", "no-unit", "junk"]
)
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        de.parse_duration(text)


def test_priority_threshold_value_and_name_refused() -> None:
    with pytest.raises(ValueError, match="only one of value or name"):
        de.Args.model_validate({"priorityThreshold": {"value": 1, "name": "x"}})


def test_node_fit_refuses_pod_fitting_nowhere_else() -> None:
    objects = [
        node("n1"),
        node("n2", taints=[{"key": "k", "effect": "NoSchedule"}]),
        replicaset("app", 1, 1),
        pod("target", "n1", owner=("app", 1)),
    ]
    sim = Simulation(objects)
    try:
        handle = DeschedulerHandle(sim.cluster)
        evictor = de.DefaultEvictor(de.Args(node_fit=True), handle)
        stored = sim.cluster.get("Pod", "default", "target")
        assert evictor.pre_eviction_filter(stored) == de.ERR_NO_FIT
        assert de.DefaultEvictor(de.Args(), handle).pre_eviction_filter(stored) is None
    finally:
        sim.close()


@pytest.mark.parametrize(
    ("owners", "want"),
    [(1, de.ERR_MIN_REPLICAS % (2, 3)), (2, None)],
    ids=["one-owner-counted", "several-owners-not-checked"],
)
def test_min_replicas_counts_the_pods_naming_the_owner(owners: int, want: str | None) -> None:
    # As the descheduler's owner index: the pods that name the owner (two); a pod with
    # several owners is not checked.
    target = pod("target", "n1", owner=("app", 1))
    if owners == 2:
        extra = target.metadata.owner_references[0].model_copy(update={"uid": "other"})
        target.metadata.owner_references.append(extra)
    objects = [node("n1"), replicaset("app", 2, 1), target, pod("sibling", "n1", owner=("app", 1))]
    sim = Simulation(objects)
    try:
        handle = DeschedulerHandle(sim.cluster)
        evictor = de.DefaultEvictor(de.Args(min_replicas=3), handle)
        assert evictor.filter(sim.cluster.get("Pod", "default", "target")) == want
    finally:
        sim.close()


PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"namespace": "default"},
}


@pytest.mark.parametrize(
    ("selector", "want"),
    [
        ({"matchLabels": {"app": "app"}}, None),
        ({"matchLabels": {"app": "other"}}, de.ERR_NO_PDB),
        ({}, de.ERR_NO_PDB),
        (None, de.ERR_NO_PDB),
    ],
    ids=["covered", "other-pods", "empty-selector-covers-none", "no-budget"],
)
def test_ignore_pods_without_pdb(selector: dict[str, Any] | None, want: str | None) -> None:
    objects = [node("n1"), replicaset("app", 1, 1), pod("target", "n1", owner=("app", 1))]
    if selector is not None:
        spec = {"minAvailable": 0, "selector": selector}
        objects.append(
            parse_object({**PDB, "metadata": {**PDB["metadata"], "name": "b"}, "spec": spec})
        )
    sim = Simulation(objects)
    try:
        handle = DeschedulerHandle(sim.cluster)
        evictor = de.DefaultEvictor(de.Args(ignore_pods_without_pdb=True), handle)
        assert evictor.filter(sim.cluster.get("Pod", "default", "target")) == want
        assert (
            de.DefaultEvictor(de.Args(), handle).filter(sim.cluster.get("Pod", "default", "target"))
            is None
        )
    finally:
        sim.close()
