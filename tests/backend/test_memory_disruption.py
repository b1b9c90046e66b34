"""PodDisruptionBudget status and the Eviction API of the embedded cluster."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import Pod, PodDisruptionBudget
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.memory.disruption import (
    MSG_MULTIPLE_PDBS,
    MSG_VIOLATES_PDB,
    scaled_value_from_int_or_percent,
)

from .helpers import obj, pod, template


def pdb(name: str = "budget", selector: dict | None = None, **spec: Any):
    sel = {"matchLabels": {"app": "web"}} if selector is None else selector
    return obj("PodDisruptionBudget", name, spec={"selector": sel, **spec})


def web_rs(replicas: int, bound: int, cluster: MemoryCluster) -> None:
    """A ReplicaSet ``web`` with ``replicas`` pods, the first ``bound`` of them bound."""
    cluster.create(
        obj(
            "ReplicaSet",
            "web",
            spec={
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": template({"app": "web"}),
            },
        )
    )
    for p in cluster.pods()[:bound]:
        cluster.bind(p, "n1")


def status(cluster: MemoryCluster, name: str = "budget") -> tuple[int, int, int, int]:
    s = cluster.get("PodDisruptionBudget", "default", name).status
    return s.current_healthy, s.desired_healthy, s.expected_pods, s.disruptions_allowed


@pytest.mark.parametrize(
    ("value", "total", "up", "want"),
    [
        (2, 10, True, 2),
        ("50%", 5, True, 3),
        ("50%", 5, False, 2),
        ("10%", 3, True, 1),
        ("0%", 3, True, 0),
        ("100%", 3, True, 3),
    ],
    ids=["int", "half-up", "half-down", "small-up", "zero", "all"],
)
def test_scaled_value(value, total: int, up: bool, want: int):
    assert scaled_value_from_int_or_percent(value, total, up) == want


def test_scaled_value_rejects_non_percent_strings():
    with pytest.raises(ValueError, match="not a percentage"):
        scaled_value_from_int_or_percent("5", 10, True)


@pytest.mark.parametrize(
    ("spec", "replicas", "bound", "want"),
    [
        # (currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed)
        ({"minAvailable": 2}, 4, 4, (4, 2, 4, 2)),
        ({"minAvailable": 2}, 4, 2, (2, 2, 4, 0)),
        ({"minAvailable": "50%"}, 5, 5, (5, 3, 5, 2)),
        ({"minAvailable": "50%"}, 5, 3, (3, 3, 5, 0)),
        ({"maxUnavailable": 1}, 4, 4, (4, 3, 4, 1)),
        ({"maxUnavailable": "30%"}, 5, 5, (5, 3, 5, 2)),
        ({"maxUnavailable": "30%"}, 5, 2, (2, 3, 5, 0)),
        ({"maxUnavailable": 10}, 3, 3, (3, 0, 3, 3)),
        ({"minAvailable": 0}, 0, 0, (0, 0, 0, 0)),
        ({}, 3, 3, (3, 0, 0, 0)),
    ],
    ids=[
        "min-int-all-healthy",
        "min-int-at-budget",
        "min-percent-rounds-up",
        "min-percent-at-budget",
        "max-int",
        "max-percent-rounds-up",
        "max-percent-unhealthy",
        "max-above-scale-clamps-desired",
        "no-pods-no-disruptions",
        "neither-set",
    ],
)
def test_pdb_status(cluster: MemoryCluster, spec: dict, replicas: int, bound: int, want: tuple):
    web_rs(replicas, bound, cluster)
    cluster.create(pdb(**spec))
    assert status(cluster) == want
    st = cluster.get("PodDisruptionBudget", "default", "budget")
    assert st.status.observed_generation == st.metadata.generation


def test_pdb_status_follows_pods(cluster: MemoryCluster):
    cluster.create(pdb(minAvailable=1))
    assert status(cluster) == (0, 1, 0, 0)
    web_rs(2, 0, cluster)
    assert status(cluster) == (0, 1, 2, 0)
    for p in cluster.pods():
        cluster.bind(p, "n1")
    assert status(cluster) == (2, 1, 2, 1)
    cluster.delete_pod(cluster.pods()[0])  # terminating pods are not healthy
    assert status(cluster)[0] == 1


def test_expected_pods_come_from_the_deployment_scale(cluster: MemoryCluster):
    cluster.create(pdb(maxUnavailable="50%"))
    cluster.create(
        obj(
            "Deployment",
            "web",
            spec={
                "replicas": 4,
                "selector": {"matchLabels": {"app": "web"}},
                "template": template({"app": "web"}),
            },
        )
    )
    for p in cluster.pods():
        cluster.bind(p, "n1")
    assert status(cluster) == (4, 2, 4, 2)
    d = cluster.get("Deployment", "default", "web").model_copy(deep=True)
    d.spec.replicas = 6
    cluster.update(d)
    assert status(cluster) == (4, 3, 6, 1)


@pytest.mark.parametrize(
    ("owner", "want_allowed"),
    # Unmanaged: expectedPods 4 (the loose pod is left out), desired 2, but all 5 ready
    # pods count as healthy, as upstream.
    [("none", 3), ("job", 0)],
    ids=["unmanaged-pods-left-out", "job-pods-fail-safe"],
)
def test_percent_budgets_and_pods_without_scale(
    cluster: MemoryCluster, owner: str, want_allowed: int
):
    web_rs(4, 4, cluster)
    if owner == "job":
        cluster.create(
            obj("Job", "j", spec={"template": template({"app": "web"}, restartPolicy="Never")})
        )
        job_pod = next(p for p in cluster.pods() if p.metadata.controller_ref.kind == "Job")
        cluster.bind(job_pod, "n1")
    else:
        # Not app=web: the ReplicaSet would adopt it.
        cluster.bind(cluster.create(pod("loose", labels={"app": "web-loose"})), "n1")
    either = {
        "matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "web-loose"]}]
    }
    cluster.create(pdb(minAvailable="50%", selector=either))
    assert status(cluster)[3] == want_allowed


# --- eviction -------------------------------------------------------------------------------


def test_eviction_decrements_and_then_refuses(cluster: MemoryCluster):
    web_rs(3, 3, cluster)
    cluster.create(pdb(minAvailable=2))
    victims = [p for p in cluster.pods()]
    first = cluster.evict_pod(victims[0])
    assert (first.code, first.message) == (200, "")
    evicted: Pod = cluster.get("Pod", "default", victims[0].name)
    assert evicted.metadata.deletion_timestamp is not None
    cond = [c for c in evicted.status.conditions if c.type == "DisruptionTarget"]
    assert cond and cond[0].reason == "EvictionByEvictionAPI"
    assert status(cluster)[3] == 0
    second = cluster.evict_pod(victims[1])
    assert (second.code, second.message, tuple(second.blocking_pdbs)) == (
        429,
        MSG_VIOLATES_PDB,
        ("budget",),
    )
    assert cluster.get("Pod", "default", victims[1].name).metadata.deletion_timestamp is None


def test_eviction_without_budget_deletes(cluster: MemoryCluster):
    p = cluster.create(pod("p"))
    cluster.bind(p, "n1")
    assert cluster.evict_pod(p).code == 200
    assert cluster.get("Pod", "default", "p").metadata.deletion_timestamp is not None


def test_eviction_with_two_budgets_is_an_internal_error(cluster: MemoryCluster):
    web_rs(2, 2, cluster)
    cluster.create(pdb("a", minAvailable=0))
    cluster.create(pdb("b", maxUnavailable=1))
    result = cluster.evict_pod(cluster.pods()[0])
    assert (result.code, result.message) == (500, MSG_MULTIPLE_PDBS)
    assert MSG_MULTIPLE_PDBS == (
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
        "not support."
    )


def test_eviction_of_a_missing_pod(cluster: MemoryCluster):
    p = cluster.create(pod("p"))
    cluster.delete("Pod", "default", "p")
    assert (cluster.evict_pod(p).code, cluster.evict_pod(p).message) == (404, 'pods "p" not found')


@pytest.mark.parametrize(
    ("prepare", "code"),
    [
        ("pending", 200),
        ("terminating", 200),
        ("unready-budget-met", 200),
        ("unready-budget-short", 429),
        ("unready-always-allow", 200),
    ],
    ids=[
        "pending-ignores-pdb",
        "terminating-ignores-pdb",
        "unready-when-budget-met",
        "unready-when-budget-short",
        "unready-always-allow",
    ],
)
def test_eviction_special_cases(cluster: MemoryCluster, prepare: str, code: int):
    # A fourth, unbound pod of the ReplicaSet is the pending one.
    web_rs(4 if prepare == "pending" else 3, 3, cluster)
    policy = {"unhealthyPodEvictionPolicy": "AlwaysAllow"} if "always" in prepare else {}
    min_available = 3 if "short" in prepare else 1
    cluster.create(pdb(minAvailable=min_available, **policy))
    target = cluster.pods()[0]
    if prepare == "pending":
        (target,) = [p for p in cluster.pods() if not p.spec.node_name]
    elif prepare == "terminating":
        cluster.delete_pod(target)
        target = cluster.get("Pod", "default", target.name)
    else:
        from kubesched.backend import PodCondition

        cluster.update_pod_status(target, condition=PodCondition("Ready", "False"))
        if "short" in prepare:
            # Another unready pod so that the budget (3) is not met.
            cluster.update_pod_status(cluster.pods()[1], condition=PodCondition("Ready", "False"))
    result = cluster.evict_pod(target)
    assert result.code == code


def test_pdb_status_write_is_a_watch_event(cluster: MemoryCluster):
    seen: list[PodDisruptionBudget] = []
    cluster.watch("PodDisruptionBudget", "0", lambda ev: seen.append(ev.object))
    cluster.create(pdb(minAvailable=1))
    web_rs(2, 2, cluster)
    assert seen[-1].status.disruptions_allowed == 1


def test_incremental_status_equals_a_full_recount(cluster: MemoryCluster, clock):
    from kubesched.backend.memory import DisruptionController

    cluster.create(pdb(maxUnavailable="25%"))
    web_rs(6, 4, cluster)
    cluster.apply([pod("loose", labels={"app": "web"})])  # applied while controllers wait
    pods = cluster.pods()
    cluster.evict_pod(pods[0])
    cluster.delete_pod(pods[1], 5)
    relabel = cluster.get("Pod", "default", pods[2].name).model_copy(deep=True)
    relabel.metadata.labels = {"app": "other"}
    cluster.update(relabel)
    clock.step(5)
    cluster.advance()
    budget = cluster.get("PodDisruptionBudget", "default", "budget")
    fresh = DisruptionController(cluster).compute_status(budget)
    assert fresh == budget.status
    assert budget.status.expected_pods == 6
