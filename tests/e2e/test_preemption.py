"""End-to-end preemption through ``kubesched.simulate``: bursts, PDBs, the docs' affinity limit."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import parse_object
from kubesched.simulate.driver import simulate
from kubesched.testing import make_node, make_pod

HOST = "kubernetes.io/hostname"
LOW, MID, HIGH = 10, 500, 1000
GRACE = 30


def priority_classes() -> list[Any]:
    return [
        parse_object(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
        for name, value in (("low", LOW), ("mid", MID), ("high", HIGH))
    ]


def nodes(n: int, cpu: str = "4") -> list[Any]:
    return [
        make_node(f"node-{i}")
        .capacity(cpu=cpu, memory="16Gi", pods="110")
        .labels({HOST: f"node-{i}"})
        .obj()
        for i in range(n)
    ]


def running(name: str, node: str, cls: str, cpu: str = "1", labels: dict | None = None):
    b = make_pod(name).req(cpu=cpu).priority_class(cls).node(node).termination_grace_period(GRACE)
    if labels:
        b = b.labels(labels)
    return b.obj()


def pending(name: str, cls: str, cpu: str = "2"):
    return make_pod(name).req(cpu=cpu).priority_class(cls).obj()


def pdb(name: str, labels: dict[str, str], max_unavailable: int | str) -> Any:
    return parse_object(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": labels}, "maxUnavailable": max_unavailable},
        }
    )


def preempted(run) -> list[tuple[str, str]]:
    """(victim name, event message) of every Preempted event."""
    return [(e.involved_name, e.message) for e in run.cluster.events if e.reason == "Preempted"]


def final_nodes(run) -> dict[str, str | None]:
    return {p.metadata.name: p.spec.node_name for p in run.cluster.pods()}


def _burst_cluster(n_nodes: int = 10) -> tuple[list[Any], dict[str, int]]:
    """Every node full: two low and one mid pod of 1 cpu, one high pod of 1 cpu."""
    objs: list[Any] = [*priority_classes(), *nodes(n_nodes)]
    prio: dict[str, int] = {}
    for i in range(n_nodes):
        for j, cls in enumerate(("low", "low", "mid", "high")):
            name = f"run-{i}-{j}"
            objs.append(running(name, f"node-{i}", cls))
            prio[name] = {"low": LOW, "mid": MID, "high": HIGH}[cls]
    return objs, prio


def test_burst_of_high_priority_pods_preempts_only_what_it_needs():
    objs, prio = _burst_cluster()
    burst = [pending(f"burst-{k}", "high") for k in range(8)]
    run = simulate([*objs, *burst], seed=11)

    placed = final_nodes(run)
    assert all(placed[f"burst-{k}"] for k in range(8)), placed
    victims = preempted(run)
    # Each burst pod needs 2 cpu on a full 4-cpu node: exactly two victims each.
    assert len(victims) == 16
    # Never a victim of equal or higher priority than the preemptors; low pods go first
    # (there are 20 of them for 16 victims).
    assert {prio[name] for name, _ in victims} == {LOW}
    assert all(placed.get(f"run-{i}-3") for i in range(10))
    # The victims are gone, and each burst pod runs on the node it was nominated to
    # (nothing else freed room meanwhile).
    for name, _ in victims:
        assert name not in placed
    for k in range(8):
        records = next(r for r in run.attempts.values() if r[0].pod_key == f"default/burst-{k}")
        first, last = records[0], records[-1]
        assert first.result == "unschedulable" and first.nominated_node
        assert last.result == "scheduled" and last.node_name == first.nominated_node
        # The Kubernetes docs' gap: the preemptor waits for its victims' graceful termination.
        assert last.started_at >= first.started_at + GRACE
    assert run.metrics.preemption_victims._sum.get() == 16


def test_preemption_respects_pod_disruption_budgets_when_it_can():
    objs, _ = _burst_cluster()
    # The first low pod of every node is guarded: no disruption allowed.
    for i in range(10):
        objs = [
            running(f"run-{i}-0", f"node-{i}", "low", labels={"app": "guarded"})
            if getattr(o, "kind", None) == "Pod" and o.metadata.name == f"run-{i}-0"
            else o
            for o in objs
        ]
    objs.append(pdb("guarded", {"app": "guarded"}, 0))
    burst = [pending(f"burst-{k}", "high", cpu="1") for k in range(6)]
    run = simulate([*objs, *burst], seed=5)

    placed = final_nodes(run)
    assert all(placed[f"burst-{k}"] for k in range(6))
    victims = [name for name, _ in preempted(run)]
    assert len(victims) == 6
    # The unguarded low pod is taken on each node; no PDB is violated.
    assert all(name.endswith("-1") for name in victims), victims
    guard = run.cluster.get("PodDisruptionBudget", "default", "guarded")
    assert guard.status.current_healthy == 10


def test_pdb_violations_are_minimised_not_avoided():
    # Two nodes; every low pod is guarded by a PDB allowing one disruption. The burst
    # needs two victims: the first respects the budget, the second cannot.
    objs = [*priority_classes(), *nodes(2, cpu="2")]
    for i in range(2):
        for j in range(2):
            objs.append(running(f"g-{i}-{j}", f"node-{i}", "low", labels={"app": "g"}))
    objs.append(pdb("g", {"app": "g"}, 1))
    burst = [pending(f"burst-{k}", "high", cpu="1") for k in range(2)]
    run = simulate([*objs, *burst], seed=2)

    placed = final_nodes(run)
    assert placed["burst-0"] and placed["burst-1"]
    assert len(preempted(run)) == 2


def test_affinity_to_lower_priority_pod_blocks_preemption_seed_002():
    """The Kubernetes docs, "Inter-Pod affinity on lower-priority Pods": the node holding the
    pod the preemptor has affinity to is not a candidate, since removing every lower-priority pod
    removes that pod too. The other node fails NodeResourcesFit first (Filter stops at the
    first rejecting plugin), so it is dry-run too, and without its pods it still lacks a
    db pod: neither node is a candidate."""
    objs = [*priority_classes(), *nodes(2)]
    objs.append(running("db", "node-0", "low", cpu="3", labels={"app": "db"}))
    objs.append(running("filler", "node-1", "low", cpu="4"))
    web = make_pod("web").req(cpu="2").priority_class("high").pod_affinity(HOST, {"app": "db"})
    run = simulate([*objs, web.obj()], seed=1)

    assert final_nodes(run)["web"] is None
    assert preempted(run) == []
    (records,) = [r for r in run.attempts.values() if r[0].pod_key == "default/web"]
    msg = records[-1].message
    assert "preemption: 0/2 nodes are available:" in msg
    assert msg.startswith(
        "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: "
    )
    assert msg.endswith("0/2 nodes are available: 2 node(s) didn't match pod affinity rules.")


def test_affinity_to_equal_priority_pod_is_the_recommended_fix():
    objs = [*priority_classes(), *nodes(2)]
    objs.append(running("db", "node-0", "high", cpu="2", labels={"app": "db"}))
    objs.append(running("cache", "node-0", "low", cpu="2"))
    objs.append(running("filler", "node-1", "low", cpu="4"))
    web = make_pod("web").req(cpu="2").priority_class("high").pod_affinity(HOST, {"app": "db"})
    run = simulate([*objs, web.obj()], seed=1)

    assert final_nodes(run)["web"] == "node-0"
    assert [name for name, _ in preempted(run)] == ["cache"]


@pytest.mark.parametrize("policy_class", ["never"])
def test_non_preempting_priority_class_waits(policy_class):
    objs = [*priority_classes(), *nodes(1)]
    objs.append(
        parse_object(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "never"},
                "value": HIGH,
                "preemptionPolicy": "Never",
            }
        )
    )
    objs.append(running("low-0", "node-0", "low", cpu="4"))
    run = simulate([*objs, pending("patient", policy_class)], seed=1)
    assert final_nodes(run)["patient"] is None
    assert preempted(run) == []
    (records,) = [r for r in run.attempts.values() if r[0].pod_key == "default/patient"]
    assert records[-1].message.endswith("preemption: not eligible due to preemptionPolicy=Never.")
