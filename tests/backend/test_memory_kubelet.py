"""Node-pressure eviction: the kubelet's ranking (the Kubernetes docs'), thresholds, grace periods,
minimum reclaim, conditions and taints, and the Failed status it writes."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import KubeletConfiguration, parse_object
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.memory.kubelet import format_binary, rank_pods
from kubesched.clock import FakeClock
from tests.backend.helpers import obj
from tests.backend.test_memory_tainteviction import run_until

GI = 1024**3
MI = 1024**2


@pytest.fixture
def cluster(clock: FakeClock) -> MemoryCluster:
    return MemoryCluster(clock, node_pressure_eviction=True, lenient_admission=True)


def node(name: str = "n1", memory: str = "4Gi", **annotations: str):
    return obj(
        "Node",
        name,
        metadata={"annotations": annotations},
        status={
            "capacity": {"cpu": "4", "memory": memory},
            "allocatable": {"cpu": "4", "memory": memory},
        },
    )


def mpod(name: str, request: str | None, usage: str | None, priority: int = 0, **spec: Any):
    resources = {"requests": {"memory": request}} if request else {}
    ann = {"usage.kubesched.io/memory": usage} if usage else {}
    return parse_object(
        {
            "kind": "Pod",
            "metadata": {"name": name, "annotations": ann},
            "spec": {
                "nodeName": "n1",
                "priority": priority,
                "containers": [{"name": "app", "image": "busybox", "resources": resources}],
                **spec,
            },
        }
    )


@pytest.mark.parametrize(
    ("pods", "order"),
    [
        # The Kubernetes docs: usage above requests first, then lower priority, then usage relative
        # to requests.
        (
            [("guaranteed-low", "1Gi", "512Mi", 0), ("burstable-high-over", "1Gi", "2Gi", 1000)],
            ["burstable-high-over", "guaranteed-low"],
        ),
        (
            [("a", None, "100Mi", 10), ("b", None, "100Mi", 5)],
            ["b", "a"],
        ),
        (
            [("small-excess", "1Gi", "1100Mi", 0), ("big-excess", "1Gi", "3Gi", 0)],
            ["big-excess", "small-excess"],
        ),
        (
            [
                ("under-high", "2Gi", "1Gi", 100),
                ("under-low", "2Gi", "1Gi", 1),
                ("over", "0", "1Mi", 1000),
            ],
            ["over", "under-low", "under-high"],
        ),
    ],
    ids=["exceeding-first-whatever-priority", "then-priority", "then-excess", "all-three"],
)
def test_seed_eviction_order(pods: list[tuple], order: list[str]) -> None:
    built = [mpod(n, r, u, p) for n, r, u, p in pods]
    assert [r.pod.name for r in rank_pods(built, "memory")] == order


def test_pid_ranking_is_priority_only() -> None:
    built = [mpod("hungry", None, None, 5), mpod("low", None, None, 1)]
    assert [r.pod.name for r in rank_pods(built, "pids")] == ["low", "hungry"]


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0"),
        (100 * MI, "100Mi"),
        (1536 * MI, "1536Mi"),
        (GI, "1Gi"),
        (1000, "1000"),
        (2048, "2Ki"),
    ],
    ids=["zero", "mi", "not-gi", "gi", "plain", "ki"],
)
def test_format_binary(n: int, text: str) -> None:
    assert format_binary(n) == text


def test_hard_threshold_evicts_one_pod_per_pass_with_the_kubelets_message(
    cluster: MemoryCluster, clock: FakeClock
) -> None:
    # 4Gi node; default hard threshold memory.available<100Mi.
    cluster.apply(
        [
            node(),
            mpod("fits", "1Gi", "1Gi", 0),
            mpod("hog", "1Gi", "2Gi", 0),
            mpod("prio", "512Mi", "1000Mi", 100),
        ]
    )
    run_until(cluster, clock, 0)
    hog = cluster.get("Pod", "default", "hog")
    assert hog.status.phase == "Running"
    run_until(cluster, clock, 1)  # the hard threshold's 1 s grace
    hog = cluster.get("Pod", "default", "hog")
    assert hog.status.phase == "Failed" and hog.status.reason == "Evicted"
    assert hog.status.message == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 24Mi. "
        "Container app was using 2Gi, request is 1Gi, has larger consumption of memory. "
    )
    (rec,) = cluster.evictions
    assert rec.by == "kubelet" and rec.grace_period_seconds == 1
    assert [r["pod"] for r in rec.details["ranking"]] == [
        "default/hog",
        "default/prio",
        "default/fits",
    ]
    n = cluster.get("Node", None, "n1")
    cond = next(c for c in n.status.conditions if c.type == "MemoryPressure")
    assert (cond.status, cond.reason) == ("True", "KubeletHasInsufficientMemory")
    assert ("node.kubernetes.io/memory-pressure", "NoSchedule") in [
        (t.key, t.effect) for t in n.spec.taints
    ]
    run_until(cluster, clock, 400)
    assert len(cluster.evictions) == 1  # reclaimed: 2Gi free now
    n = cluster.get("Node", None, "n1")
    cond = next(c for c in n.status.conditions if c.type == "MemoryPressure")
    assert cond.status == "False"  # after the 5 min transition period
    assert not any(t.key == "node.kubernetes.io/memory-pressure" for t in n.spec.taints)


def test_soft_threshold_waits_for_its_grace_period_and_caps_the_pod_grace(
    cluster: MemoryCluster, clock: FakeClock
) -> None:
    cfg = KubeletConfiguration.model_validate(
        {
            "evictionHard": {"memory.available": "100Mi"},
            "evictionSoft": {"memory.available": "1Gi"},
            "evictionSoftGracePeriod": {"memory.available": "1m30s"},
            "evictionMaxPodGracePeriod": 20,
        }
    )
    cluster.apply([cfg, node(), mpod("p", "1Gi", "3500Mi", 0, terminationGracePeriodSeconds=60)])
    run_until(cluster, clock, 80)
    assert not cluster.evictions
    run_until(cluster, clock, 90)
    (rec,) = cluster.evictions
    assert rec.time == 90 and rec.grace_period_seconds == 20  # min(20, 60)
    run_until(cluster, clock, 109)
    assert cluster.get("Pod", "default", "p").status.phase == "Running"
    run_until(cluster, clock, 110)
    assert cluster.get("Pod", "default", "p").status.phase == "Failed"


def test_minimum_reclaim_keeps_evicting(cluster: MemoryCluster, clock: FakeClock) -> None:
    cfg = KubeletConfiguration.model_validate(
        {
            "evictionHard": {"memory.available": "500Mi"},
            "evictionMinimumReclaim": {"memory.available": "1Gi"},
        }
    )
    pods = [mpod(f"p{i}", "100Mi", "720Mi", i) for i in range(5)]  # 3600Mi of 4096Mi used
    cluster.apply([cfg, node(), *pods])
    run_until(cluster, clock, 100)
    # 496Mi free < 500Mi; after one eviction 1216Mi < 500Mi + 1Gi: a second one.
    assert [r.pod for r in cluster.evictions] == ["default/p0", "default/p1"]


def test_critical_pods_are_never_evicted(cluster: MemoryCluster, clock: FakeClock) -> None:
    cluster.apply(
        [node(), mpod("critical", None, "4000Mi", 2_000_001_000), mpod("other", "1Gi", "10Mi", 0)]
    )
    run_until(cluster, clock, 60)
    assert [r.pod for r in cluster.evictions][:1] == ["default/other"]
    assert cluster.get("Pod", "default", "critical").status.phase == "Running"


def test_no_node_pressure_without_usage_above_capacity(cluster: MemoryCluster, clock: FakeClock):
    cluster.apply([node(), mpod("a", "1Gi", None, 0), mpod("b", "2Gi", None, 0)])
    run_until(cluster, clock, 600)
    assert not cluster.evictions
    assert not any(
        c.type == "MemoryPressure" for c in cluster.get("Node", None, "n1").status.conditions
    )


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ({"evictionHard": {"memory.free": "1Gi"}}, "unsupported eviction signal memory.free"),
        ({"evictionSoft": {"memory.available": "1Gi"}}, "grace period must be specified"),
        ({"evictionHard": {"memory.available": "0"}}, "must be positive"),
        ({"evictionHard": {"nodefs.available": "0%"}}, "must be positive"),
        ({"evictionHard": {"memory.available": "lots"}}, "memory.available"),
    ],
    ids=["bad-signal", "soft-without-grace", "zero", "zero-percent", "bad-quantity"],
)
def test_bad_kubelet_configuration(config: dict, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        KubeletConfiguration.model_validate(config)
