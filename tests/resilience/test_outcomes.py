"""What one failure does to tiny clusters, each outcome worked out from how the controllers
react: the node goes Unknown after 50 s, its pods are evicted after their 300 s
tolerationSeconds, a ReplicaSet replaces them at once, a StatefulSet waits for the pod to
be gone (never, on an unreachable node), a DaemonSet's pods tolerate it forever."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.framework.registry import default_registry
from kubesched.resilience import Failure, resilience
from kubesched.resilience.report import FailureOutcome
from tests.resilience.conftest import bound_pod, budget, node, workload

ON_NODE_1 = {"nodeSelector": {"kubernetes.io/hostname": "node-1"}}
"""Pods that run on node-1 and can go nowhere else."""
FOREVER = {
    "tolerations": [
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
    ]
}
"""A toleration of the unreachable taint without tolerationSeconds: never evicted."""


def fail_node_1(objects: list[Any], window: float = 600.0) -> FailureOutcome:
    registry = default_registry()
    report = resilience(
        objects,
        lambda nodes: [Failure("node node-1", ("node-1",))],
        registry=registry,
        window=window,
        workers=1,
    )
    (outcome,) = report.failures
    return outcome


def brief(outcome: FailureOutcome) -> dict[str, tuple[Any, ...]]:
    """Per workload: (before, lowest, after, kept, evicted, replaced, pending); per
    budget: (desired, before, lowest, after, violated, violated at end)."""
    out: dict[str, tuple[Any, ...]] = {}
    for w in outcome.workloads:
        out[f"{w.kind} {w.name}"] = (
            w.before,
            w.lowest,
            w.after,
            w.kept,
            w.evicted,
            w.replaced,
            w.pending,
        )
    for b in outcome.budgets:
        out[f"PDB {b.name}"] = (
            b.desired_healthy,
            b.before,
            b.lowest,
            b.after,
            b.violated,
            b.violated_at_end,
        )
    return out


CASES = [
    pytest.param(
        [node("node-1"), node("node-2"), workload("Deployment", "web", 1, **ON_NODE_1)],
        {"Deployment default/web": (1, 0, 0, False, 1, 0, 1)},
        id="deployment-pinned-to-the-node-replaced-but-pending",
    ),
    pytest.param(
        [node("node-1"), workload("Deployment", "web", 1)],
        {"Deployment default/web": (1, 0, 0, False, 0, 0, 0)},
        id="every-zone-down-nothing-evicted",
    ),
    pytest.param(
        [node("node-1"), node("node-2"), workload("StatefulSet", "db", 1, **ON_NODE_1)],
        {"StatefulSet default/db": (1, 0, 0, False, 1, 0, 0)},
        id="statefulset-pod-waits-for-its-terminating-pod",
    ),
    pytest.param(
        [
            node("node-1"),
            node("node-2"),
            workload("Deployment", "web", 2, **ON_NODE_1),
            budget("web", minAvailable=2),
        ],
        {
            "Deployment default/web": (2, 0, 0, False, 2, 0, 2),
            "PDB default/web": (2, 2, 0, 0, True, True),
        },
        id="budget-of-two-on-one-node-violated",
    ),
    pytest.param(
        [node("node-1"), node("node-2"), workload("DaemonSet", "agent")],
        {},
        id="daemonset-pod-is-no-loss",
    ),
    pytest.param(
        [node("node-1"), node("node-2"), bound_pod("lonely", "node-1")],
        {"Pod default/lonely": (1, 0, 0, False, 1, 0, 0)},
        id="pod-without-controller-written-bound-is-lost",
    ),
    pytest.param(
        [node("node-1"), node("node-2"), workload("Deployment", "web", 1, **ON_NODE_1 | FOREVER)],
        {"Deployment default/web": (1, 0, 0, False, 0, 0, 0)},
        id="pod-tolerating-unreachable-forever-stays",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), CASES)
def test_one_failure(objects: list[Any], expected: dict[str, tuple[Any, ...]]) -> None:
    assert brief(fail_node_1(objects)) == expected


def test_replicaset_replaces_the_pod_elsewhere_and_keeps_its_replica() -> None:
    # node-1 has the most room: the least-allocated score puts the replica there.
    objects = [node("node-1", cpu="16"), node("node-2"), workload("Deployment", "web", 1)]
    outcome = fail_node_1(objects)
    (web,) = outcome.workloads
    assert (web.before, web.lowest, web.after, web.kept) == (1, 0, 1, True)
    assert (web.evicted, web.replaced, web.pending) == (1, 1, 0)
    assert outcome.harmless() and outcome.workloads_lost == 0


def test_daemonset_pods_are_counted_apart() -> None:
    outcome = fail_node_1([node("node-1"), node("node-2"), workload("DaemonSet", "agent")])
    assert outcome.daemon_pods_down == 1 and outcome.harmless()


def test_a_window_shorter_than_the_toleration_evicts_nothing() -> None:
    objects = [node("node-1"), node("node-2"), workload("Deployment", "web", 1, **ON_NODE_1)]
    (web,) = fail_node_1(objects, window=120.0).workloads
    assert (web.before, web.lowest, web.after, web.evicted, web.pending) == (1, 0, 0, 0, 0)


def test_a_replacement_that_preempts_lowers_another_workload() -> None:
    # web (high priority, prefers node-1) and batch (low) take 3 of each node's 4 cpu.
    # node-1 fails: web's replacement preempts batch on node-2, whose own replacement has
    # nowhere to go.
    high, low = (
        parse_object(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
        for name, value in (("high", 1000), ("low", 10))
    )
    prefers_node_1 = {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "preference": {
                    "matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}
                    ]
                },
            }
        ]
    }
    big = [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "3"}}}]
    objects = [
        high,
        low,
        node("node-1"),
        node("node-2"),
        workload(
            "Deployment",
            "web",
            1,
            priorityClassName="high",
            affinity={"nodeAffinity": prefers_node_1},
            containers=big,
        ),
        workload("Deployment", "batch", 1, priorityClassName="low", containers=big),
    ]
    assert brief(fail_node_1(objects)) == {
        "Deployment default/batch": (1, 0, 0, False, 0, 0, 1),
        "Deployment default/web": (1, 0, 1, True, 1, 1, 0),
    }
