"""Properties of evictions over a timeline (hypothesis): what the Kubernetes docs say each evictor
honours. API-initiated eviction (a drain) never takes a PDB below its budget and gives the
pod its terminationGracePeriodSeconds; the taint manager gives the pod its grace period
too; the kubelet honours neither PDBs nor the pod's grace period beyond
evictionMaxPodGracePeriod (1 s for a hard threshold)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api import parse_object
from kubesched.backend.memory.disruption import is_pod_ready
from kubesched.backend.protocol import EventType
from kubesched.simulate.driver import Simulation
from kubesched.simulate.timeline import Timeline, TimelineRunner

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _node(name: str, zone: str, memory: str = "16Gi") -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        "status": {
            "capacity": {"cpu": "8", "memory": memory, "pods": "110"},
            "allocatable": {"cpu": "8", "memory": memory, "pods": "110"},
        },
    }


def _deployment(replicas: int, grace: int, usage: str | None = None) -> dict[str, Any]:
    ann = {"usage.kubesched.io/memory": usage} if usage else {}
    return {
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": ann},
                "spec": {
                    "terminationGracePeriodSeconds": grace,
                    "containers": [
                        {
                            "name": "app",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}},
                        }
                    ],
                },
            },
        },
    }


def _pdb(min_available: int) -> dict[str, Any]:
    return {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "web"}}},
    }


def _run(docs: list[dict], steps: list[dict]) -> Any:
    objects = [parse_object(d) for d in docs]
    timeline = Timeline.model_validate(
        {"apiVersion": "kubesched.io/v1alpha1", "kind": "Timeline", "spec": {"steps": steps}}
    )
    sim = Simulation(objects, timeline=TimelineRunner(timeline, base_dir=None))  # type: ignore[arg-type]
    removed: dict[str, float] = {}  # pod uid -> when it left the cluster or failed
    sim.cluster.watch(
        "Pod",
        sim.cluster.resource_version,
        lambda ev: (
            removed.setdefault(ev.object.metadata.uid, sim.clock.now())
            if ev.type is EventType.DELETED or ev.object.status.phase == "Failed"
            else None
        ),
    )
    healthy_at_eviction: list[int] = []
    record = sim.cluster.record_eviction

    def spy(rec: Any) -> None:
        record(rec)
        # Healthy selected pods right after this eviction (the evicted one terminating).
        pods = [p for p in sim.cluster.pods() if p.metadata.labels.get("app") == "web"]
        healthy = sum(
            1
            for p in pods
            if p.metadata.deletion_timestamp is None
            and p.metadata.uid != rec.uid
            and is_pod_ready(p)
        )
        healthy_at_eviction.append(healthy)

    sim.cluster.record_eviction = spy  # type: ignore[method-assign]
    run = sim.run()
    return run, removed, healthy_at_eviction


@SETTINGS
@given(
    replicas=st.integers(1, 6),
    budget=st.integers(0, 6),
    grace=st.integers(0, 120),
    drained=st.sets(st.sampled_from(["a1", "a2", "b1"]), min_size=1),
)
def test_drain_honours_pdb_and_grace(replicas: int, budget: int, grace: int, drained: set[str]):
    min_available = min(budget, replicas)
    docs = [
        _node("a1", "a"),
        _node("a2", "a"),
        _node("b1", "b"),
        _deployment(replicas, grace),
        _pdb(min_available),
    ]
    steps = [{"at": 10, "action": "drain", "nodes": sorted(drained), "timeout": "10m"}]
    run, removed, healthy = _run(docs, steps)
    drains = [e for e in run.cluster.evictions if e.by == "drain"]
    assert all(h >= min_available for h in healthy)  # never below the budget
    for e in drains:
        assert e.grace_period_seconds == grace
        if e.uid in removed:
            assert removed[e.uid] - e.time == grace  # the pod's own grace period


@SETTINGS
@given(grace=st.integers(0, 600), toleration=st.integers(1, 900))
def test_taint_manager_gives_the_pods_grace_period(grace: int, toleration: int):
    docs = [_node("a1", "a"), _node("b1", "b"), _deployment(2, grace)]
    docs[2]["spec"]["template"]["spec"]["tolerations"] = [
        {
            "key": "maint",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": toleration,
        }
    ]
    taint = {"key": "maint", "effect": "NoExecute"}
    steps = [
        {"at": 5, "action": "taint", "nodes": ["a1", "b1"], "taint": taint},
        {"at": 5 + toleration, "action": "untaint", "nodes": ["a1", "b1"], "key": "maint"},
    ]
    run, removed, _ = _run(docs, steps)
    tm = [e for e in run.cluster.evictions if e.by == "taint-manager"]
    # Evicted when the time ran out; the untaint at that instant comes after them.
    assert len(tm) == 2 and all(e.time == 5 + toleration for e in tm)
    for e in tm:
        assert removed[e.uid] - e.time == grace


@SETTINGS
@given(
    grace=st.integers(0, 600),
    replicas=st.integers(2, 5),
    max_grace=st.integers(0, 60),
    soft=st.booleans(),
)
def test_kubelet_ignores_pdbs_and_caps_grace(grace: int, replicas: int, max_grace: int, soft: bool):
    # Every replica comes to use 4Gi: the node has 50Mi left (below the soft threshold
    # only) or 1Gi too little (below the hard one).
    memory = f"{4096 * replicas + 50}Mi" if soft else f"{4 * replicas - 1}Gi"
    cfg: dict[str, Any] = {"kind": "KubeletConfiguration", "evictionMaxPodGracePeriod": max_grace}
    if soft:
        cfg |= {
            "evictionHard": {"memory.available": "1Mi"},
            "evictionSoft": {"memory.available": "100Mi"},
            "evictionSoftGracePeriod": {"memory.available": "30s"},
        }
    docs = [cfg, _node("a1", "a", memory), _deployment(replicas, grace), _pdb(replicas)]
    docs[3]["spec"]["minAvailable"] = replicas  # no voluntary disruption allowed at all
    steps = [
        {
            "at": 20,
            "action": "setPodUsage",
            "podSelector": {"app": "web"},
            "usage": {"memory": "4Gi"},
        }
    ]
    run, removed, _ = _run(docs, steps)
    kubelet = [e for e in run.cluster.evictions if e.by == "kubelet"]
    assert kubelet, "memory pressure evicts despite the PDB"
    want = min(max_grace, grace) if soft else 1
    for e in kubelet:
        assert e.grace_period_seconds == want
        assert removed[e.uid] - e.time == want
