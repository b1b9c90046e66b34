"""``Simulation(in_file_order=True, strict_namespaces=True)`` creates objects as
``kubectl create -f`` does on a real cluster: in the order given, refusing an object
whose namespace does not exist yet; by default kinds go in dependency order and a
missing namespace is created."""

from __future__ import annotations

from typing import Any

from kubesched.api import KubeObject, Quantity, parse_object
from kubesched.simulate.driver import Simulation

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
}
QUOTA = {
    "apiVersion": "v1",
    "kind": "ResourceQuota",
    "metadata": {"name": "requests", "namespace": "team"},
    "spec": {"hard": {"requests.cpu": "2", "requests.memory": "4Gi"}},
}
LIMIT_RANGE = {
    "apiVersion": "v1",
    "kind": "LimitRange",
    "metadata": {"name": "defaults", "namespace": "team"},
    "spec": {
        "limits": [{"type": "Container", "defaultRequest": {"cpu": "250m", "memory": "256Mi"}}]
    },
}


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def pod(name: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [{"name": "app", "image": "example/app:1"}]},
    }


def objects(*docs: dict[str, Any]) -> list[KubeObject]:
    return [parse_object(d) for d in docs]


def refused(sim: Simulation) -> dict[str, str]:
    return {r.source_object_key: r.message for r in sim.rejections}


def test_a_limit_range_after_a_pod_does_not_default_it() -> None:
    docs = objects(
        namespace("team"), NODE, QUOTA, pod("early", "team"), LIMIT_RANGE, pod("late", "team")
    )
    sim = Simulation(docs, in_file_order=True, strict_namespaces=True)
    assert refused(sim) == {
        "Pod team/early": 'pods "early" is forbidden: failed quota: requests: must specify '
        "requests.cpu for: app; requests.memory for: app"
    }
    late = sim.cluster.get("Pod", "team", "late")
    assert late.spec.containers[0].resources.requests["cpu"] == Quantity("250m")  # type: ignore[attr-defined]
    # In dependency order the LimitRange goes first and defaults both pods.
    assert refused(Simulation(docs)) == {}


def test_strict_namespaces_refuse_objects_before_their_namespace() -> None:
    docs = objects(
        NODE,
        pod("early", "team"),
        namespace("team"),
        pod("late", "team"),
        pod("lost", "nowhere"),
        pod("plain", "default"),
    )
    sim = Simulation(docs, in_file_order=True, strict_namespaces=True)
    assert refused(sim) == {
        "Pod team/early": 'namespaces "team" not found',
        "Pod nowhere/lost": 'namespaces "nowhere" not found',
    }
    run = sim.run()
    assert sorted(p.key for p in run.cluster.pods() if p.spec.node_name) == [
        "default/plain",
        "team/late",
    ]
    assert run.cluster.get_namespace("nowhere") is None
