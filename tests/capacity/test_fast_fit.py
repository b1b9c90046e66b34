"""``capacity fit``'s node-by-node count gives the answer of scheduling every copy."""

from __future__ import annotations

import random

import pytest

from kubesched import Code, Status, hookimpl
from kubesched.capacity import capacity_fit, capacity_nodes, fastfit, node_shapes, pod_template
from kubesched.config import config_from_dict
from kubesched.framework.registry import default_registry
from kubesched.testing import make_node, make_pod

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _random_cluster(rng: random.Random) -> list:
    """A few nodes of mixed shapes, some tainted, unschedulable or labelled, with pods
    bound (some with host ports, some repelling the copies by anti-affinity) and pods
    left for the scheduler."""
    objects = []
    n_nodes = rng.randint(1, 7)
    for i in range(n_nodes):
        b = make_node(f"n{i}").capacity(
            cpu=rng.choice(["1", "2", "3500m", "4"]),
            memory=rng.choice(["2Gi", "4Gi", "8Gi"]),
            pods=rng.choice(["3", "5", "110"]),
        )
        b = b.zone(rng.choice(["zone-a", "zone-b"]))
        if rng.random() < 0.2:
            b = b.taint("dedicated", "gpu")
        if rng.random() < 0.1:
            b = b.unschedulable()
        if rng.random() < 0.5:
            b = b.labels(disk="ssd")
        objects.append(b.obj())
    for j in range(rng.randint(0, 8)):
        p = make_pod(f"run-{j}").req(cpu=rng.choice(["100m", "500m", "1"]), memory="256Mi")
        if rng.random() < 0.3:
            p = p.host_port(8080)
        if rng.random() < 0.2:
            p = p.labels(team="x").pod_anti_affinity(rng.choice([HOSTNAME, ZONE]), {"app": "probe"})
        if rng.random() < 0.7:
            p = p.node(f"n{rng.randrange(n_nodes)}")
        objects.append(p.obj())
    return objects


def _random_template(rng: random.Random):
    p = make_pod("probe").labels(app="probe")
    p = p.req(
        cpu=rng.choice(["0", "250m", "700m", "1", "1500m"]),
        memory=rng.choice(["0", "128Mi", "1Gi", "3Gi"]),
    )
    if rng.random() < 0.3:
        p = p.host_port(8080)
    if rng.random() < 0.3:
        p = p.node_selector({"disk": "ssd"})
    if rng.random() < 0.3:
        p = p.toleration("dedicated", "gpu", "NoSchedule")
    template, _ = pod_template([p.obj()], "probe.yaml")
    return template


def _answer(report) -> dict:
    data = report.to_dict()
    data.pop("wallTime")
    return data


@pytest.mark.parametrize("seed", range(40), ids=lambda s: f"seed-{s}")
def test_same_answer_as_scheduling_every_copy(seed) -> None:
    rng = random.Random(seed)
    cluster = _random_cluster(rng)
    template = _random_template(rng)
    max_copies = rng.choice([None, None, None, 3, 7])
    slow = capacity_fit(cluster, template, max_copies=max_copies, fast=False)
    fast = capacity_fit(cluster, template, max_copies=max_copies)
    assert _answer(fast) == _answer(slow)


def test_the_random_clusters_take_the_node_by_node_count(monkeypatch) -> None:
    """Most of the random cases above are answered by the node-by-node count (so the
    comparison compares something)."""
    counted = []
    real = fastfit.NodeLocalCount.count

    def spy(self, limit):
        result = real(self, limit)
        counted.append(result)
        return result

    monkeypatch.setattr(fastfit.NodeLocalCount, "count", spy)
    for seed in range(40):
        rng = random.Random(seed)
        cluster = _random_cluster(rng)
        capacity_fit(cluster, _random_template(rng))
    assert sum(counted) >= 20


@pytest.mark.parametrize(
    ("pod", "waiting", "reason"),
    [
        (
            make_pod("p").pod_anti_affinity(HOSTNAME, {"app": "p"}),
            False,
            "required pod (anti-)affinity",
        ),
        (make_pod("p").spread_constraint(1, ZONE, selector={"app": "p"}), False, None),
        (make_pod("p"), True, "pending pod default/waiting with pod affinity or spread"),
    ],
    ids=["anti-affinity", "spread", "pending-pod-a-copy-may-help"],
)
def test_copies_that_are_scheduled_one_by_one(pod, waiting, reason, monkeypatch) -> None:
    """Cross-node constraints take the copy-by-copy path (their counts are checked by
    hand in test_fit.py); here, that the node-by-node count stands aside for them."""
    seen = []
    real = fastfit.blocker

    def spy(sim, fwk, copy):
        seen.append(real(sim, fwk, copy))
        return seen[-1]

    monkeypatch.setattr("kubesched.capacity.fit.blocker", spy)
    nodes = [
        make_node(f"n{i}").capacity(cpu="4", memory="8Gi").zone("zone-a").obj() for i in range(2)
    ]
    if waiting:  # a pod waiting for a pod that the copies' labels would satisfy
        nodes.append(make_pod("waiting").pod_affinity(HOSTNAME, {"app": "p", "x": "y"}).obj())
    template, _ = pod_template([pod.labels(app="p").req(cpu="1").obj()], "p.yaml")
    counted = []
    real_count = fastfit.NodeLocalCount.count
    monkeypatch.setattr(
        fastfit.NodeLocalCount,
        "count",
        lambda self, limit: counted.append(real_count(self, limit)) or counted[-1],
    )
    capacity_fit(nodes, template)
    if reason is None:
        # The spread constraint passes the static checks; its PreFilter does not skip.
        assert seen == [None] and counted == [False]
    else:
        assert seen == [reason] and counted == []


def _random_workload(rng: random.Random) -> list:
    """Pods of one or two kinds, some only for a labelled pool, some spread or repelling
    each other, so that part of them stays pending on the random cluster."""
    pods = []
    for k in range(rng.randint(1, 2)):
        cpu = rng.choice(["500m", "1", "2"])
        pool = rng.random() < 0.4
        spread = rng.random() < 0.2
        for i in range(rng.randint(1, 8)):
            p = make_pod(f"w{k}-{i}").labels(app=f"w{k}").req(cpu=cpu, memory="512Mi")
            if pool:
                p = p.node_selector({"pool": "new"})
            if spread:
                p = p.spread_constraint(1, HOSTNAME, selector={"app": f"w{k}"})
            pods.append(p.obj())
    return pods


@pytest.mark.parametrize("seed", range(12), ids=lambda s: f"seed-{s}")
def test_nodes_same_answer_without_the_shortcuts(seed) -> None:
    """``capacity nodes`` gives the same answer when it simulates the plan without new
    nodes and every periodic retry, as when it takes them from the workload's own run."""
    rng = random.Random(seed)
    cluster = _random_cluster(rng)
    workload = _random_workload(rng)
    template = make_node("new").capacity(cpu="4", memory="16Gi").zone("zone-a")
    shapes = node_shapes([template.labels(pool="new").obj()], "pool.yaml")
    slow = capacity_nodes(cluster, workload, shapes, max_nodes=12, fast=False)
    fast = capacity_nodes(cluster, workload, shapes, max_nodes=12)
    assert _answer(fast) == _answer(slow)


class OnePerNode:
    """A plugin of one's own: a node takes one pod labelled ``app`` at most."""

    name = "OnePerNode"

    def __init__(self, args, handle) -> None:
        pass

    @hookimpl
    def filter(self, state, pod, node_info):
        if any("app" in p.pod.metadata.labels for p in node_info.pods):
            return Status(Code.UNSCHEDULABLE, "node(s) already run an app pod")
        return None


def test_a_plugin_of_ones_own_is_scheduled_copy_by_copy(monkeypatch) -> None:
    registry = default_registry()
    registry.add_class(OnePerNode)
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"plugins": {"filter": {"enabled": [{"name": "OnePerNode"}]}}}],
        },
        registry,
    )
    counted = []
    monkeypatch.setattr(fastfit.NodeLocalCount, "count", lambda *a: counted.append(1) or False)
    nodes = [make_node(f"n{i}").capacity(cpu="4", memory="8Gi").obj() for i in range(2)]
    template, _ = pod_template([make_pod("p").labels(app="p").req(cpu="1").obj()], "p.yaml")
    report = capacity_fit(nodes, template, config=config, registry=registry)
    # Four per node by resources; one per node by the plugin, which the answer follows.
    assert report.count == 2
    assert report.stop.reasons[0].plugin == "OnePerNode"
    assert counted == []
