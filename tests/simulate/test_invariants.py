"""The invariant checker: silent on a correct run, and it catches each broken guarantee."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.config import API_VERSION, KIND, config_from_dict
from kubesched.framework.registry import default_registry
from kubesched.simulate import InvariantChecker, InvariantViolation, Simulation, simulate
from kubesched.testing import make_node, make_pod


def _config(off: list[str], extension_point: str = "filter") -> Any:
    """The default profile with the plugins ``off`` disabled at ``extension_point``."""
    return config_from_dict(
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "plugins": {extension_point: {"disabled": [{"name": n} for n in off]}},
                }
            ],
        },
        default_registry(),
    )


def _mixed_cluster() -> list[Any]:
    zones = ["a", "b", "c"]
    nodes = [
        make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110).zone(zones[i % 3]).obj()
        for i in range(9)
    ]
    nodes.append(make_node("tainted").capacity(cpu="64", memory="64Gi").taint("gpu", "x").obj())
    pods = []
    for i in range(12):
        pods.append(
            make_pod(f"web-{i}")
            .labels(app="web")
            .req(cpu="500m", memory="256Mi")
            .spread_constraint(1, "topology.kubernetes.io/zone", "DoNotSchedule", {"app": "web"})
            .obj()
        )
    for i in range(4):
        pods.append(
            make_pod(f"db-{i}")
            .labels(app="db")
            .req(cpu="1")
            .pod_anti_affinity("kubernetes.io/hostname", {"app": "db"})
            .obj()
        )
    for i in range(3):
        pods.append(
            make_pod(f"cache-{i}")
            .labels(app="cache")
            .req(cpu="100m")
            .pod_affinity("topology.kubernetes.io/zone", {"app": "db"})
            .obj()
        )
    pods.append(make_pod("big").req(cpu="100").obj())
    return nodes + pods


def test_a_correct_run_has_no_violation() -> None:
    run = simulate(_mixed_cluster(), check_invariants=True)
    checker = run.invariants
    assert checker is not None
    assert checker.violations == []
    assert checker.bindings == 19  # "big" fits nowhere
    assert checker.checks > checker.bindings * 4
    assert "19 bindings" in checker.summary() and "no violation" in checker.summary()


@pytest.mark.parametrize(
    ("disabled", "invariant"),
    [
        (["NodeResourcesFit"], "resources"),
        (["TaintToleration"], "taints"),
        (["PodTopologySpread"], "topology-spread"),
        (["InterPodAffinity"], "pod-anti-affinity"),
    ],
    ids=["fit-off", "taints-off", "spread-off", "interpodaffinity-off"],
)
def test_a_disabled_filter_is_caught(disabled: list[str], invariant: str) -> None:
    objects = [
        make_node("small").capacity(cpu="1", memory="1Gi").zone("a").obj(),
        make_node("tainted").capacity(cpu="64", memory="64Gi").zone("b").taint("k", "v").obj(),
    ]
    objects += (
        [
            make_pod(f"p{i}")
            .labels(app="x")
            .req(cpu="900m")
            .node_selector(
                {"kubernetes.io/hostname": "small" if invariant == "resources" else "tainted"}
            )
            .obj()
            for i in range(2)
        ]
        if invariant in ("resources", "taints")
        else []
    )
    if invariant == "topology-spread":
        objects = [make_node(f"n{z}").capacity(cpu="8", memory="8Gi").zone(z).obj() for z in "ab"]
        objects += [
            make_pod(f"s{i}")
            .labels(app="s")
            .node_selector({"topology.kubernetes.io/zone": "a"})
            .preferred_node_affinity(100, "kubernetes.io/hostname", ["na"])
            .spread_constraint(1, "kubernetes.io/hostname", "DoNotSchedule", {"app": "s"})
            .obj()
            for i in range(3)
        ]
        objects.append(make_node("nb2").capacity(cpu="8", memory="8Gi").zone("a").obj())
    if invariant == "pod-anti-affinity":
        objects = [make_node("only").capacity(cpu="8", memory="8Gi").obj()]
        objects += [
            make_pod(f"a{i}")
            .labels(app="a")
            .pod_anti_affinity("kubernetes.io/hostname", {"app": "a"})
            .obj()
            for i in range(2)
        ]
    run = simulate(objects, config=_config(disabled), check_invariants=True)
    assert run.invariants is not None
    found = {v.invariant for v in run.invariants.violations}
    assert invariant in found, run.invariants.violations
    with pytest.raises(InvariantViolation, match=invariant):
        run.invariants.assert_ok()


def test_a_lost_pod_and_a_corrupt_cache_are_caught() -> None:
    sim = Simulation(
        [make_node("n").capacity(cpu="1", memory="1Gi").obj()]
        + [make_pod(f"p{i}").req(cpu="600m").obj() for i in range(2)],
        check_invariants=True,
    )
    run = sim.run()
    assert run.invariants is not None and run.invariants.violations == []
    pending = next(p for p in run.cluster.pods() if not p.spec.node_name)
    sim.scheduler.queue.delete(pending)  # the scheduler forgets a pod
    # ... and miscounts a node (get_node hands out a copy: reach the cache's own).
    sim.scheduler.cache._nodes["n"].info.requested.milli_cpu += 1
    found = {(v.invariant, v.subject) for v in run.invariants.finish()}
    assert ("lost-pod", "default/" + pending.name) in found
    assert ("cache", "n") in found


def test_a_second_binding_is_caught() -> None:
    sim = Simulation(
        [make_node(n).capacity(cpu="1", memory="1Gi").obj() for n in ("a", "b")]
        + [make_pod("p").obj()],
        check_invariants=True,
    )
    run = sim.run()
    pod = run.cluster.get("Pod", "default", "p").model_copy(deep=True)
    pod.spec.node_name = "b" if pod.spec.node_name == "a" else "a"
    # The API server refuses this update (nodeName is set by a binding only): a buggy
    # binder writing past it is what the checker must catch.
    run.cluster.validate = False
    run.cluster.update(pod)
    assert run.invariants is not None
    assert [v.invariant for v in run.invariants.violations] == ["double-binding"]


def test_checker_alone_on_a_cluster() -> None:
    from kubesched.backend.memory import MemoryCluster
    from kubesched.clock import FakeClock

    cluster = MemoryCluster(FakeClock())
    checker = InvariantChecker(cluster).attach()
    cluster.create(make_node("n").capacity(cpu="1", memory="1Gi").obj())
    for i in range(2):
        cluster.create(make_pod(f"p{i}").req(cpu="800m").obj())
    for p in cluster.pods():
        cluster.bind(p, "n")
    checker.detach()
    assert [v.invariant for v in checker.finish()] == ["resources", "resources"]


# --- volume restrictions ---------------------------------------------------------------------


def _volume_case(case: str) -> list[Any]:
    from tests.plugins.volume_objects import (
        claim_volume,
        csi_node,
        pod_with,
        pv,
        pvc,
        storage_class,
    )

    nodes = [make_node(n).capacity(cpu="8", memory="8Gi").obj() for n in ("a", "b")]
    static = storage_class("static", mode="Immediate", provisioner="kubernetes.io/no-provisioner")
    if case == "read-write-once-pod":
        rwop = ("ReadWriteOncePod",)
        return [
            *nodes,
            static,
            pv("vol", cls="static", modes=rwop),
            pvc("data", cls="static", modes=rwop),
            pod_with(claim_volume("data"), name="one", uid="u1"),
            pod_with(claim_volume("data"), name="two", uid="u2"),
        ]
    if case == "disk-conflict":
        disk = {"name": "d", "gcePersistentDisk": {"pdName": "disk-1"}}
        pods = [pod_with(disk, name=f"p{i}", uid=f"u{i}") for i in range(2)]
        for pod in pods:
            pod.spec.node_selector = {"kubernetes.io/hostname": "a"}
        return [*nodes, *pods]
    if case == "attach-limit":
        objects: list[Any] = [*nodes, csi_node("a", count=1), static]
        for i in range(2):
            objects.append(
                pv(
                    f"v{i}",
                    cls="static",
                    csi={"driver": "disk.csi.example.com", "volumeHandle": f"h{i}"},
                )
            )
            objects.append(pvc(f"c{i}", cls="static"))
            pod = pod_with(claim_volume(f"c{i}"), name=f"p{i}", uid=f"u{i}")
            pod.spec.node_selector = {"kubernetes.io/hostname": "a"}
            objects.append(pod)
        return objects
    # pv-node-affinity: the only PV may be reached from node a; the pod asks for b.
    near_a = {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}
                ]
            }
        ]
    }
    volume = pv(
        "vol", cls="static", hostPath={"path": "/mnt/vol"}, nodeAffinity={"required": near_a}
    )
    pod = pod_with(claim_volume("data"), name="p", uid="u")
    pod.spec.node_selector = {"kubernetes.io/hostname": "b"}
    return [*nodes, static, volume, pvc("data", cls="static"), pod]


VOLUME_CASES = [
    ("read-write-once-pod", ["VolumeRestrictions"], "ReadWriteOncePod claim default/data"),
    ("disk-conflict", ["VolumeRestrictions"], "GCE PD disk-1 is already mounted on a"),
    (
        "attach-limit",
        ["NodeVolumeLimits"],
        "a: 2 disk.csi.example.com volumes attached > CSINode limit 1",
    ),
    ("pv-node-affinity", ["VolumeBinding"], "b is outside the node affinity of PV vol"),
]


@pytest.mark.parametrize(("case", "off", "message"), VOLUME_CASES, ids=[c[0] for c in VOLUME_CASES])
def test_volume_restrictions_hold_and_a_disabled_plugin_is_caught(
    case: str, off: list[str], message: str
) -> None:
    healthy = simulate(_volume_case(case), check_invariants=True)
    assert healthy.invariants is not None and healthy.invariants.violations == []
    broken = simulate(_volume_case(case), config=_config(off, "multiPoint"), check_invariants=True)
    assert broken.invariants is not None
    found = [str(v) for v in broken.invariants.violations]
    assert any(v.startswith("volumes: ") and message in v for v in found), found
