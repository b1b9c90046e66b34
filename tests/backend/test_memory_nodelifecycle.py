"""The node lifecycle controller: condition taints, the 50 s grace, zone-limited NoExecute
tainting, full disruption, and pod GC of a deleted node's pods."""

from __future__ import annotations

import pytest

from kubesched.backend.memory import MemoryCluster
from kubesched.clock import FakeClock
from tests.backend.helpers import obj, pod
from tests.backend.test_memory_tainteviction import run_until


def node(name: str, zone: str, taints: list[dict] | None = None, ready: bool = True):
    conditions = [{"type": "Ready", "status": "True"}] if ready else []
    return obj(
        "Node",
        name,
        metadata={"labels": {"topology.kubernetes.io/zone": zone}},
        spec={"taints": taints or []},
        status={"conditions": conditions},
    )


def no_execute(cluster: MemoryCluster, name: str) -> list[str]:
    n = cluster.get("Node", None, name)
    return [t.key for t in n.spec.taints if t.effect == "NoExecute"]


def added_at(cluster: MemoryCluster, name: str) -> float:
    from kubesched.backend.memory.naming import EPOCH

    (t,) = [t for t in cluster.get("Node", None, name).spec.taints if t.effect == "NoExecute"]
    return (t.time_added - EPOCH).total_seconds()


def test_unreachable_after_the_grace_period_one_node_per_ten_seconds(cluster, clock):
    nodes = [node(f"a{i}", "a") for i in range(3)] + [node("b0", "b")]
    cluster.apply(nodes)
    run_until(cluster, clock, 10)
    for i in range(3):
        cluster.node_lifecycle.stop_heartbeats(f"a{i}")
    run_until(cluster, clock, 59)
    assert all(no_execute(cluster, f"a{i}") == [] for i in range(3))
    run_until(cluster, clock, 200)
    conds = {c.type: c for c in cluster.get("Node", None, "a0").status.conditions}
    assert conds["Ready"].status == "Unknown"
    assert conds["Ready"].message == "Kubelet stopped posting node status."
    # Zone a is fully disrupted, zone b healthy: 0.1 node/s from the first pass at 60 s.
    assert sorted(added_at(cluster, f"a{i}") for i in range(3)) == [60.0, 70.0, 80.0]
    assert no_execute(cluster, "a0") == ["node.kubernetes.io/unreachable"]
    noschedule = [
        t.key for t in cluster.get("Node", None, "a0").spec.taints if t.effect == "NoSchedule"
    ]
    assert noschedule == ["node.kubernetes.io/unreachable"]


def test_every_zone_down_taints_nothing(cluster, clock):
    cluster.apply([node("a0", "a"), node("b0", "b")])
    cluster.node_lifecycle.set_ready("a0", "False", "KubeletNotReady", "x")
    cluster.node_lifecycle.set_ready("b0", "False", "KubeletNotReady", "x")
    run_until(cluster, clock, 300)
    assert no_execute(cluster, "a0") == [] and no_execute(cluster, "b0") == []


@pytest.mark.parametrize(
    ("ready", "not_ready", "tainted"),
    [(1, 3, 0), (60, 2, 2), (1, 1, 1)],
    ids=["small-partial-disruption-stops", "few-not-ready-is-normal", "half-is-normal"],
)
def test_zone_states(cluster, clock, ready: int, not_ready: int, tainted: int):
    nodes = [node(f"r{i}", "a") for i in range(ready)]
    nodes += [node(f"n{i}", "a") for i in range(not_ready)] + [node("other", "b")]
    cluster.apply(nodes)
    for i in range(not_ready):
        cluster.node_lifecycle.set_ready(f"n{i}", "False", "KubeletNotReady", "x")
    run_until(cluster, clock, 600)
    got = sum(1 for i in range(not_ready) if no_execute(cluster, f"n{i}"))
    assert got == tainted


def test_restore_removes_the_taints_and_manifest_taints_stay(cluster, clock):
    hand = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}
    cluster.apply([node("a0", "a"), node("b0", "b"), node("c0", "c", [hand], ready=False)])
    cluster.node_lifecycle.set_ready("a0", "False", "KubeletNotReady", "x")
    run_until(cluster, clock, 30)
    assert no_execute(cluster, "a0") == ["node.kubernetes.io/not-ready"]
    cluster.node_lifecycle.set_ready("a0", "True", "KubeletReady", "ok")
    run_until(cluster, clock, 60)
    assert cluster.get("Node", None, "a0").spec.taints == []
    # A node that reports no condition keeps what its manifest says.
    assert no_execute(cluster, "c0") == ["node.kubernetes.io/not-ready"]


def test_cordon_adds_the_unschedulable_taint(cluster: MemoryCluster):
    cluster.apply([node("a0", "a")])
    n = cluster.get("Node", None, "a0").model_copy(deep=True)
    n.spec.unschedulable = True
    n.metadata.resource_version = None
    cluster.update(n)
    taints = cluster.get("Node", None, "a0").spec.taints
    assert [(t.key, t.effect) for t in taints] == [
        ("node.kubernetes.io/unschedulable", "NoSchedule")
    ]


def test_pod_gc_of_a_deleted_node(cluster: MemoryCluster, clock: FakeClock):
    cluster.apply([node("a0", "a"), pod("p", nodeName="a0")])
    run_until(cluster, clock, 5)
    cluster.delete("Node", None, "a0")
    run_until(cluster, clock, 44)
    assert cluster.try_get("Pod", "default", "p") is not None
    run_until(cluster, clock, 45)
    assert cluster.try_get("Pod", "default", "p") is None
    (rec,) = cluster.evictions
    assert (rec.by, rec.time, rec.message) == ("pod-gc", 45, "PodGC: node no longer exists")


def test_pods_of_an_unreachable_node_stay_terminating_until_it_returns(cluster, clock):
    cluster.apply([node("a0", "a"), node("b0", "b"), pod("p", nodeName="a0")])
    run_until(cluster, clock, 10)
    cluster.node_lifecycle.stop_heartbeats("a0")
    run_until(cluster, clock, 1000)
    # Tainted at 60 s, deleted by the taint manager at 360 s (admission's 300 s), but
    # nobody on the node confirms it.
    p = cluster.get("Pod", "default", "p")
    assert p.metadata.deletion_timestamp is not None
    assert [(r.by, r.time) for r in cluster.evictions] == [("taint-manager", 360.0)]
    cluster.node_lifecycle.set_ready("a0", "True", "KubeletReady", "ok")
    run_until(cluster, clock, 1000)
    assert cluster.try_get("Pod", "default", "p") is None
