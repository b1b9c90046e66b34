"""Each strategy end to end on an embedded cluster: which pods it evicts, where they go,
and whether its goal is met. Cases after the descheduler's own plugin tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kubesched.deschedule import deschedule, parse_policy

from .conftest import node, pod, replicaset, requests

OLD = "2025-12-31T00:00:00Z"
"""A day before the embedded cluster's clock starts: older than any lifetime below."""
TAINT = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
TOLERATE = [{"key": "dedicated", "operator": "Exists"}]


def policy(strategy: str, point: str, args: dict[str, Any] | None = None, **top: Any) -> Any:
    """A one-profile policy running ``strategy`` at ``point`` with ``args``."""
    config = [{"name": strategy, "args": args}] if args is not None else []
    return parse_policy(
        {
            "apiVersion": "descheduler/v1alpha2",
            "kind": "DeschedulerPolicy",
            **top,
            "profiles": [
                {
                    "name": "p",
                    "pluginConfig": config,
                    "plugins": {point: {"enabled": [strategy]}},
                }
            ],
        }
    )


def owned(
    names: list[str], node_name: str | None, rs: str = "app", n: int = 1, **kw: Any
) -> list[Any]:
    """The ReplicaSet ``rs`` and its pods ``names`` bound to ``node_name``; ``labels``,
    ``creationTimestamp`` and ``status`` go to the pods, the rest to every pod spec."""
    meta = {k: kw.pop(k) for k in ("creationTimestamp", "status") if k in kw}
    labels = kw.pop("labels", {})
    return [
        replicaset(rs, len(names), n, labels=labels, **kw),
        *(pod(x, node_name, owner=(rs, n), labels=dict(labels), **meta, **kw) for x in names),
    ]


TAINTS = "RemovePodsViolatingNodeTaints"
AFFINITY = "RemovePodsViolatingNodeAffinity"
ANTI = "RemovePodsViolatingInterPodAntiAffinity"
REQUIRED = {"nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]}
ANTI_X = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"role": "x"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}
ANTI_ZONE = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"role": "x"}}, "topologyKey": "zone"}
        ]
    }
}

CASES: list[tuple[str, list[Any], Any, set[str]]] = [
    (
        "taints-untolerated",
        [node("n1", taints=TAINT), node("n2"), *owned(["p1"], "n1")],
        policy(TAINTS, "deschedule"),
        {"p1"},
    ),
    (
        "taints-tolerated",
        [node("n1", taints=TAINT), node("n2"), *owned(["p1"], "n1", tolerations=TOLERATE)],
        policy(TAINTS, "deschedule"),
        set(),
    ),
    (
        "taints-prefer-no-schedule-ignored",
        [
            node("n1", taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
            node("n2"),
            *owned(["p1"], "n1"),
        ],
        policy(TAINTS, "deschedule"),
        set(),
    ),
    (
        "taints-prefer-no-schedule-included",
        [
            node("n1", taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
            node("n2"),
            *owned(["p1"], "n1"),
        ],
        policy(TAINTS, "deschedule", {"includePreferNoSchedule": True}),
        {"p1"},
    ),
    (
        "taints-excluded",
        [node("n1", taints=TAINT), node("n2"), *owned(["p1"], "n1")],
        policy(TAINTS, "deschedule", {"excludedTaints": ["dedicated=batch"]}),
        set(),
    ),
    (
        "taints-included-other",
        [node("n1", taints=TAINT), node("n2"), *owned(["p1"], "n1")],
        policy(TAINTS, "deschedule", {"includedTaints": ["other"]}),
        set(),
    ),
    (
        "taints-bare-pod-not-evictable",
        [node("n1", taints=TAINT), node("n2"), pod("p1", "n1")],
        policy(TAINTS, "deschedule"),
        set(),
    ),
    (
        "taints-namespace-excluded",
        [node("n1", taints=TAINT), node("n2"), *owned(["p1"], "n1")],
        policy(TAINTS, "deschedule", {"namespaces": {"exclude": ["default"]}}),
        set(),
    ),
    (
        "affinity-no-longer-matches",
        [
            node("n1"),
            node("n2", labels={"disk": "ssd"}),
            *owned(["p1"], "n1", nodeSelector={"disk": "ssd"}),
        ],
        policy(AFFINITY, "deschedule", REQUIRED),
        {"p1"},
    ),
    (
        "affinity-no-other-node-fits",
        [node("n1"), node("n2"), *owned(["p1"], "n1", nodeSelector={"disk": "ssd"})],
        policy(AFFINITY, "deschedule", REQUIRED),
        set(),
    ),
    (
        "affinity-still-matches",
        [
            node("n1", labels={"disk": "ssd"}),
            node("n2", labels={"disk": "ssd"}),
            *owned(["p1"], "n1", nodeSelector={"disk": "ssd"}),
        ],
        policy(AFFINITY, "deschedule", REQUIRED),
        set(),
    ),
    (
        "anti-affinity-same-node",
        [
            node("n1"),
            node("n2"),
            *owned(["p1", "p2"], "n1", labels={"role": "x"}, affinity=ANTI_X),
        ],
        policy(ANTI, "deschedule"),
        {"p1"},
    ),
    (
        "anti-affinity-other-nodes",
        [
            node("n1"),
            node("n2"),
            *owned(["p1"], "n1", labels={"role": "x"}, affinity=ANTI_X),
            *owned(["p2"], "n2", "other", 2, labels={"role": "x"}, affinity=ANTI_X),
        ],
        policy(ANTI, "deschedule"),
        set(),
    ),
    (
        "anti-affinity-same-zone",
        [
            node("n1", labels={"zone": "a"}),
            node("n2", labels={"zone": "a"}),
            node("n3", labels={"zone": "b"}),
            *owned(["p1"], "n1", labels={"role": "x"}, affinity=ANTI_ZONE),
            *owned(["p2"], "n2", "other", 2, labels={"role": "x"}, affinity=ANTI_ZONE),
        ],
        policy(ANTI, "deschedule"),
        {"p1"},
    ),
    (
        "lifetime-old",
        [node("n1"), node("n2"), *owned(["p1"], "n1", creationTimestamp=OLD)],
        policy("PodLifeTime", "deschedule", {"maxPodLifeTimeSeconds": 3600}),
        {"p1"},
    ),
    (
        "lifetime-young",
        [node("n1"), node("n2"), *owned(["p1"], "n1")],
        policy("PodLifeTime", "deschedule", {"maxPodLifeTimeSeconds": 3600}),
        set(),
    ),
    (
        "lifetime-other-state",
        [node("n1"), node("n2"), *owned(["p1"], "n1", creationTimestamp=OLD)],
        policy("PodLifeTime", "deschedule", {"maxPodLifeTimeSeconds": 3600, "states": ["Pending"]}),
        set(),
    ),
    (
        "duplicates-three-nodes",
        [node("n1"), node("n2"), node("n3"), *owned(["p1", "p2", "p3"], "n1")],
        policy("RemoveDuplicates", "balance"),
        {"p2", "p3"},
    ),
    (
        "duplicates-two-nodes",
        [node("n1"), node("n2"), *owned(["p1", "p2", "p3", "p4"], "n1")],
        policy("RemoveDuplicates", "balance"),
        {"p3", "p4"},
    ),
    (
        "duplicates-nowhere-else",
        [node("n1"), node("n2", taints=TAINT), *owned(["p1", "p2"], "n1")],
        policy("RemoveDuplicates", "balance"),
        set(),
    ),
    (
        "duplicates-owner-kind-excluded",
        [node("n1"), node("n2"), *owned(["p1", "p2"], "n1")],
        policy("RemoveDuplicates", "balance", {"excludeOwnerKinds": ["ReplicaSet"]}),
        set(),
    ),
]

LNU = {"thresholds": {"cpu": 20, "pods": 100}, "targetThresholds": {"cpu": 50, "pods": 100}}
BUSY = ["b1", "b2", "b3", "b4"]
CASES += [
    (
        "low-utilization-moves-to-empty",
        [node("n1"), node("n2"), node("n3"), *owned(BUSY, "n1", containers=requests("800m"))],
        policy("LowNodeUtilization", "balance", LNU),
        {"b1", "b2"},
    ),
    (
        "low-utilization-no-underutilized",
        [
            node("n1"),
            node("n2"),
            *owned(BUSY, "n1", containers=requests("800m")),
            *owned(["c1"], "n2", "c", 2, containers=requests("1")),
        ],
        policy("LowNodeUtilization", "balance", LNU),
        set(),
    ),
    (
        "low-utilization-number-of-nodes",
        [node("n1"), node("n2"), node("n3"), *owned(BUSY, "n1", containers=requests("800m"))],
        policy("LowNodeUtilization", "balance", {**LNU, "numberOfNodes": 2}),
        set(),
    ),
    (
        "low-utilization-eviction-limits-node",
        [node("n1"), node("n2"), node("n3"), *owned(BUSY, "n1", containers=requests("800m"))],
        policy("LowNodeUtilization", "balance", {**LNU, "evictionLimits": {"node": 1}}),
        {"b1"},
    ),
    (
        "high-utilization-empties-small-node",
        [
            node("n1"),
            node("n2"),
            *owned(["s1"], "n1", containers=requests("200m")),
            *owned(["c1"], "n2", "c", 2, containers=requests("2")),
        ],
        policy("HighNodeUtilization", "balance", {"thresholds": {"cpu": 20}}),
        {"s1"},
    ),
    (
        "high-utilization-only-thresholding-resources",
        [
            node("n1"),
            node("n2"),
            *owned(["s1"], "n1", containers=requests("200m")),
            *owned(
                ["m1"],
                "n1",
                "mem",
                3,
                containers=[
                    {"name": "c", "image": "m:1", "resources": {"requests": {"memory": "1Gi"}}}
                ],
            ),
            *owned(["c1"], "n2", "c", 2, containers=requests("2")),
        ],
        policy(
            "HighNodeUtilization",
            "balance",
            {"thresholds": {"cpu": 20}, "evictionModes": ["OnlyThresholdingResources"]},
        ),
        {"s1"},
    ),
    (
        "high-utilization-all-under",
        [
            node("n1"),
            node("n2"),
            *owned(["s1"], "n1", containers=requests("200m")),
            *owned(["c1"], "n2", "c", 2, containers=requests("200m")),
        ],
        policy("HighNodeUtilization", "balance", {"thresholds": {"cpu": 20}}),
        set(),
    ),
    (
        "failed-pod",
        [
            node("n1"),
            node("n2"),
            *owned(["f1"], "n1", status={"phase": "Failed", "reason": "Evicted"}),
        ],
        policy("RemoveFailedPods", "deschedule", {}),
        {"f1"},
    ),
    (
        "failed-pod-other-reason",
        [
            node("n1"),
            node("n2"),
            *owned(["f1"], "n1", status={"phase": "Failed", "reason": "Evicted"}),
        ],
        policy("RemoveFailedPods", "deschedule", {"reasons": ["NodeAffinity"]}),
        set(),
    ),
    (
        "failed-pod-owner-excluded",
        [node("n1"), node("n2"), *owned(["f1"], "n1", status={"phase": "Failed"})],
        policy("RemoveFailedPods", "deschedule", {"excludeOwnerKinds": ["ReplicaSet"]}),
        set(),
    ),
    (
        "running-pod-not-failed",
        [node("n1"), node("n2"), *owned(["f1"], "n1")],
        policy("RemoveFailedPods", "deschedule", {}),
        set(),
    ),
]


FAILED = "RemoveFailedPods"


def failed(
    reason: str | None = None,
    exit_code: int | None = None,
    *,
    waiting: str | None = None,
    init: bool = False,
    pod_reason: str | None = None,
) -> dict[str, Any]:
    """A Failed pod's status: one container (or init container) terminated with ``reason``
    and ``exit_code``, or waiting with ``waiting``; ``pod_reason`` the pod's own reason."""
    state: dict[str, Any] = {}
    if waiting is not None:
        state["waiting"] = {"reason": waiting}
    else:
        state["terminated"] = {"reason": reason, "exitCode": exit_code or 0}
    key = "initContainerStatuses" if init else "containerStatuses"
    status: dict[str, Any] = {"phase": "Failed", key: [{"name": "c", "state": state}]}
    if pod_reason is not None:
        status["reason"] = pod_reason
    return status


NODES2 = [node("n1"), node("n2")]
# After the descheduler's TestRemoveFailedPods (its reasons, exit codes, init containers,
# owner kinds, namespaces and minimum lifetime cases).
CASES += [
    (
        "failed-default-args-evicts",
        [*NODES2, *owned(["f1"], "n1", status=failed("NodeAffinity"))],
        policy(FAILED, "deschedule", {}),
        {"f1"},
    ),
    (
        "failed-container-reason-matches",
        [*NODES2, *owned(["f1"], "n1", status=failed("NodeAffinity"))],
        policy(FAILED, "deschedule", {"reasons": ["NodeAffinity"]}),
        {"f1"},
    ),
    (
        "failed-container-reason-other",
        [*NODES2, *owned(["f1"], "n1", status=failed("Shutdown"))],
        policy(FAILED, "deschedule", {"reasons": ["NodeAffinity"]}),
        set(),
    ),
    (
        "failed-init-container-reason-not-included",
        [*NODES2, *owned(["f1"], "n1", status=failed("NodeAffinity", init=True))],
        policy(FAILED, "deschedule", {"reasons": ["NodeAffinity"]}),
        set(),
    ),
    (
        "failed-init-container-reason-included",
        [*NODES2, *owned(["f1"], "n1", status=failed("NodeAffinity", init=True))],
        policy(
            FAILED, "deschedule", {"reasons": ["NodeAffinity"], "includingInitContainers": True}
        ),
        {"f1"},
    ),
    (
        "failed-init-container-waiting-reason",
        [
            *NODES2,
            *owned(["f1"], "n1", status=failed(waiting="CreateContainerConfigError", init=True)),
        ],
        policy(
            FAILED,
            "deschedule",
            {"reasons": ["CreateContainerConfigError"], "includingInitContainers": True},
        ),
        {"f1"},
    ),
    (
        "failed-exit-code-matches",
        [*NODES2, *owned(["f1"], "n1", status=failed("Error", 1))],
        policy(FAILED, "deschedule", {"exitCodes": [1]}),
        {"f1"},
    ),
    (
        "failed-exit-code-other",
        [*NODES2, *owned(["f1"], "n1", status=failed("Error", 2))],
        policy(FAILED, "deschedule", {"exitCodes": [1]}),
        set(),
    ),
    (
        "failed-init-exit-code-included",
        [*NODES2, *owned(["f1"], "n1", status=failed("Error", 1, init=True))],
        policy(FAILED, "deschedule", {"exitCodes": [1], "includingInitContainers": True}),
        {"f1"},
    ),
    (
        "failed-reason-and-exit-code-both-needed",
        [*NODES2, *owned(["f1"], "n1", status=failed("Error", 1))],
        policy(FAILED, "deschedule", {"exitCodes": [1], "reasons": ["OOMKilled"]}),
        set(),
    ),
    (
        "failed-pod-reason-counts-with-container-reasons",
        [*NODES2, *owned(["f1"], "n1", status=failed("Error", 1, pod_reason="Evicted"))],
        policy(FAILED, "deschedule", {"reasons": ["Evicted"]}),
        {"f1"},
    ),
    (
        "failed-namespace-excluded",
        [*NODES2, *owned(["f1"], "n1", status=failed("NodeAffinity"))],
        policy(FAILED, "deschedule", {"namespaces": {"exclude": ["default"]}}),
        set(),
    ),
    (
        "failed-label-selector-miss",
        [*NODES2, *owned(["f1"], "n1", status=failed("NodeAffinity"))],
        policy(FAILED, "deschedule", {"labelSelector": {"matchLabels": {"tier": "x"}}}),
        set(),
    ),
    (
        "failed-owner-kind-other",
        [*NODES2, *owned(["f1"], "n1", status=failed("NodeAffinity"))],
        policy(FAILED, "deschedule", {"excludeOwnerKinds": ["Job"]}),
        {"f1"},
    ),
    (
        "failed-min-lifetime-young",
        [*NODES2, *owned(["f1"], "n1", status=failed("NodeAffinity"))],
        policy(FAILED, "deschedule", {"minPodLifetimeSeconds": 3600}),
        set(),
    ),
    (
        "failed-min-lifetime-old",
        [*NODES2, *owned(["f1"], "n1", status=failed("NodeAffinity"), creationTimestamp=OLD)],
        policy(FAILED, "deschedule", {"minPodLifetimeSeconds": 3600}),
        {"f1"},
    ),
]

PREFER_SSD = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 10,
                "preference": {
                    "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
                },
            }
        ]
    }
}
PREFERRED = {"nodeAffinityType": ["preferredDuringSchedulingIgnoredDuringExecution"]}


def waiting(reason: str, init: bool = False) -> dict[str, Any]:
    """A Running pod's status with a container (or init container) waiting for ``reason``."""
    key = "initContainerStatuses" if init else "containerStatuses"
    return {"phase": "Running", key: [{"name": "c", "state": {"waiting": {"reason": reason}}}]}


LIFETIME = {"maxPodLifeTimeSeconds": 3600}
# After the descheduler's TestRemoveNodeAffinity (preferred affinity) and TestPodLifeTime
# (states with container waiting reasons, init containers).
CASES += [
    (
        "affinity-preferred-better-node-elsewhere",
        [node("n1"), node("n2", labels={"disk": "ssd"}), *owned(["p1"], "n1", affinity=PREFER_SSD)],
        policy(AFFINITY, "deschedule", PREFERRED),
        {"p1"},
    ),
    (
        "affinity-preferred-already-on-best",
        [node("n1", labels={"disk": "ssd"}), node("n2"), *owned(["p1"], "n1", affinity=PREFER_SSD)],
        policy(AFFINITY, "deschedule", PREFERRED),
        set(),
    ),
    (
        "affinity-preferred-not-asked",
        [node("n1"), node("n2", labels={"disk": "ssd"}), *owned(["p1"], "n1", affinity=PREFER_SSD)],
        policy(AFFINITY, "deschedule", REQUIRED),
        set(),
    ),
    (
        "lifetime-container-waiting-reason",
        [
            *NODES2,
            *owned(["p1"], "n1", creationTimestamp=OLD, status=waiting("CrashLoopBackOff")),
        ],
        policy("PodLifeTime", "deschedule", {**LIFETIME, "states": ["CrashLoopBackOff"]}),
        {"p1"},
    ),
    (
        "lifetime-init-container-waiting-not-included",
        [
            *NODES2,
            *owned(["p1"], "n1", creationTimestamp=OLD, status=waiting("ErrImagePull", True)),
        ],
        policy("PodLifeTime", "deschedule", {**LIFETIME, "states": ["ErrImagePull"]}),
        set(),
    ),
    (
        "lifetime-init-container-waiting-included",
        [
            *NODES2,
            *owned(["p1"], "n1", creationTimestamp=OLD, status=waiting("ErrImagePull", True)),
        ],
        policy(
            "PodLifeTime",
            "deschedule",
            {**LIFETIME, "states": ["ErrImagePull"], "includingInitContainers": True},
        ),
        {"p1"},
    ),
]

SPREAD = "RemovePodsViolatingTopologySpreadConstraint"


def spread(skew: int, when: str = "DoNotSchedule") -> list[dict[str, Any]]:
    """A zone spread constraint over the pods labelled ``app: app``."""
    return [
        {
            "maxSkew": skew,
            "topologyKey": "zone",
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "app"}},
        }
    ]


ZONES = [node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "b"})]
SOFT = spread(1, "ScheduleAnyway")
CASES += [
    (
        "spread-skew-4-to-0",
        [*ZONES, *owned(["s1", "s2", "s3", "s4"], "n1", topologySpreadConstraints=spread(1))],
        policy(SPREAD, "balance"),
        {"s4", "s3"},
    ),
    (
        "spread-within-skew",
        [
            *ZONES,
            replicaset("app", 3, 1, topologySpreadConstraints=spread(1)),
            pod("s1", "n1", owner=("app", 1), topologySpreadConstraints=spread(1)),
            pod("s2", "n1", owner=("app", 1), topologySpreadConstraints=spread(1)),
            pod("s3", "n2", owner=("app", 1), topologySpreadConstraints=spread(1)),
        ],
        policy(SPREAD, "balance"),
        set(),
    ),
    (
        "spread-soft-ignored",
        [*ZONES, *owned(["s1", "s2", "s3"], "n1", topologySpreadConstraints=SOFT)],
        policy(SPREAD, "balance"),
        set(),
    ),
    (
        "spread-soft-included",
        [*ZONES, *owned(["s1", "s2", "s3"], "n1", topologySpreadConstraints=SOFT)],
        policy(SPREAD, "balance", {"constraints": ["DoNotSchedule", "ScheduleAnyway"]}),
        {"s3"},
    ),
    (
        "spread-other-zone-untolerated",
        [
            node("n1", labels={"zone": "a"}),
            node("n2", labels={"zone": "b"}, taints=TAINT),
            *owned(["s1", "s2", "s3"], "n1", topologySpreadConstraints=spread(1)),
        ],
        policy(SPREAD, "balance"),
        set(),
    ),
]


@pytest.mark.parametrize(
    ("objects", "pol", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_strategy(objects: list[Any], pol: Any, want: set[str]) -> None:
    report = deschedule(objects, pol)
    evicted = {e.pod.split("/")[1] for e in report.evictions if e.evicted}
    assert evicted == want
    for e in report.evictions:
        assert e.outcome
    (strategy,) = report.strategies
    assert strategy.evictions == len(want)
    assert strategy.violations_before >= len(want)


def test_replacements_land_and_goal_is_met() -> None:
    objects = [node("n1", taints=TAINT), node("n2"), *owned(["p1", "p2"], "n1")]
    report = deschedule(objects, policy(TAINTS, "deschedule"))
    assert {e.replacement_node for e in report.evictions} == {"n2"}
    assert all(e.replacement and e.replacement.startswith("default/app-") for e in report.evictions)
    (s,) = report.strategies
    assert (s.violations_before, s.violations_after, s.goal_met) == (2, 0, True)
    assert report.pods.bound_after == 2


def test_replacement_pending_is_explained() -> None:
    # The only other node is full: the replacement stays pending with the scheduler's reason.
    objects = [
        node("n1", taints=TAINT),
        node("n2", cpu="1"),
        *owned(["big"], "n2", "filler", 2, containers=requests("900m")),
        *owned(["p1"], "n1", containers=requests("500m")),
    ]
    report = deschedule(objects, policy(TAINTS, "deschedule"))
    (e,) = report.evictions
    assert e.replacement_node is None
    assert "pending" in e.outcome and "Insufficient cpu" in e.outcome
    assert report.pods.pending_after == 1


def test_pdb_refuses_and_limits_cap() -> None:
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "app", "namespace": "default"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "app"}}},
    }
    from kubesched.api import parse_object

    objects = [
        node("n1", taints=TAINT),
        node("n2"),
        *owned(["p1", "p2", "p3"], "n1"),
        parse_object(pdb),
    ]
    report = deschedule(objects, policy(TAINTS, "deschedule"))
    assert [e.evicted for e in report.evictions] == [True, False, False]
    assert "disruption budget" in (report.evictions[1].refused or "")
    (s,) = report.strategies
    assert (s.evictions, s.refused, s.goal_met) == (1, 2, False)
    capped = deschedule(objects[:-1], policy(TAINTS, "deschedule", maxNoOfPodsToEvictPerNode=2))
    assert sum(e.evicted for e in capped.evictions) == 2


def test_live_pods_age_from_the_time_the_cluster_was_read() -> None:
    # Pods of a live cluster carry real timestamps, later than the embedded clock's start.
    live = "2026-06-01T10:00:00Z"
    objects = [node("n1"), node("n2"), *owned(["p1"], "n1", creationTimestamp=live)]
    lifetime = policy("PodLifeTime", "deschedule", {"maxPodLifeTimeSeconds": 3600})
    read_two_hours_later = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    report = deschedule(objects, lifetime, reference=read_two_hours_later)
    assert [e.pod for e in report.evictions] == ["default/p1"]
    read_at_once = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
    assert deschedule(objects, lifetime, reference=read_at_once).evictions == []
    # The replacement is timed on the embedded clock: young, so the goal is met.
    (s,) = report.strategies
    assert (s.violations_after, s.goal_met) == (0, True)


def test_finished_pods_hold_no_resources() -> None:
    objects = [
        node("n1"),
        node("n2"),
        node("n3"),
        *owned(["b1", "b2"], "n1", containers=requests("800m")),
        *owned(
            ["f1", "f2"],
            "n1",
            "done",
            2,
            containers=requests("800m"),
            status={"phase": "Succeeded"},
        ),
    ]
    report = deschedule(objects, policy("LowNodeUtilization", "balance", LNU))
    assert report.evictions == []
    assert report.nodes[0].before["cpu"] == 40.0
