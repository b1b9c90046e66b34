"""What the embedded cluster sets on Nodes and Namespaces as a control plane would, and the
notices that say so: allocatable, kubelet labels, the namespace name label, implicit
namespaces (or, with strict namespaces, NamespaceLifecycle's refusal)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import Node
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.protocol import NotFoundError
from kubesched.clock import FakeClock
from kubesched.notices import collecting_notices

from .helpers import obj, pod

CAPACITY = {"cpu": "4", "memory": "8Gi", "pods": "110"}
KUBELET_LABELS = {
    "kubernetes.io/hostname": "n1",
    "kubernetes.io/os": "linux",
    "kubernetes.io/arch": "amd64",
}


def node(name: str = "n1", labels: dict[str, str] | None = None, **status: Any) -> Node:
    return obj("Node", name, metadata={"labels": labels or {}}, status=status)  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("status", "allocatable", "noticed"),
    [
        ({"capacity": CAPACITY}, CAPACITY, None),
        (
            {"capacity": CAPACITY, "allocatable": {"cpu": "3"}},
            {"cpu": "3", "memory": "8Gi", "pods": "110"},
            "status.allocatable lacks memory, pods; set to the capacity, as a kubelet "
            "without reservations reports",
        ),
        (
            {"capacity": CAPACITY, "allocatable": {"cpu": "3", "memory": "7Gi", "pods": "50"}},
            {"cpu": "3", "memory": "7Gi", "pods": "50"},
            None,
        ),
        ({}, {}, None),
    ],
    ids=["absent-is-capacity", "partial-completed-by-kubelet", "complete-kept", "no-capacity"],
)
def test_allocatable(
    cluster: MemoryCluster,
    status: dict[str, Any],
    allocatable: dict[str, str],
    noticed: str | None,
) -> None:
    with collecting_notices() as notices:
        stored = cluster.create(node(labels=KUBELET_LABELS, **status))
    assert {k: str(v) for k, v in stored.status.allocatable.items()} == allocatable  # type: ignore[attr-defined]
    assert [n.message for n in notices] == ([noticed] if noticed else [])


@pytest.mark.parametrize(
    ("labels", "node_info", "added"),
    [
        ({}, None, KUBELET_LABELS),
        (
            {},
            {"operatingSystem": "windows", "architecture": "arm64"},
            {**KUBELET_LABELS, "kubernetes.io/os": "windows", "kubernetes.io/arch": "arm64"},
        ),
        (
            {"kubernetes.io/hostname": "host-a"},
            None,
            {**KUBELET_LABELS, "kubernetes.io/hostname": "host-a"},
        ),
        (KUBELET_LABELS, None, KUBELET_LABELS),
    ],
    ids=["none", "from-node-info", "hostname-kept", "all-present"],
)
def test_kubelet_labels(
    cluster: MemoryCluster,
    labels: dict[str, str],
    node_info: dict[str, str] | None,
    added: dict[str, str],
) -> None:
    status: dict[str, Any] = {"capacity": CAPACITY}
    if node_info:
        status["nodeInfo"] = node_info
    with collecting_notices() as notices:
        stored = cluster.create(node(labels=labels, **status))
    assert stored.metadata.labels == added
    assert len(notices) == (0 if labels == KUBELET_LABELS else 1)


def test_many_nodes_make_one_notice(cluster: MemoryCluster) -> None:
    with collecting_notices() as notices:
        cluster.apply([node(f"n{i}", capacity=CAPACITY) for i in range(1000)])
    assert [str(n) for n in notices] == [
        "1000 Nodes (n0, n1, n2 and 997 more): lacks labels every kubelet sets; set "
        "kubernetes.io/hostname=<node name>, kubernetes.io/os=linux, kubernetes.io/arch=amd64"
    ]
    assert cluster.get("Node", None, "n999").metadata.labels["kubernetes.io/hostname"] == "n999"


def test_namespace_name_label_is_set_and_kept(cluster: MemoryCluster) -> None:
    labels = {"kubernetes.io/metadata.name": "other", "team": "a"}
    ns = cluster.create(obj("Namespace", "prod", metadata={"labels": labels}))
    assert ns.metadata.labels == {"kubernetes.io/metadata.name": "prod", "team": "a"}
    changed = ns.model_copy(deep=True)
    changed.metadata.labels = {"team": "b"}
    assert cluster.update(changed).metadata.labels == {
        "kubernetes.io/metadata.name": "prod",
        "team": "b",
    }


@pytest.mark.parametrize(
    ("namespace", "noticed"),
    [
        (
            "team",
            [
                'Namespace team: namespace "team" is not defined: created it (first used '
                "by Pod team/p)"
            ],
        ),
        ("kube-system", []),
        (None, []),
    ],
    ids=["undefined", "system", "default"],
)
def test_implicit_namespaces(
    cluster: MemoryCluster, namespace: str | None, noticed: list[str]
) -> None:
    with collecting_notices() as notices:
        cluster.create(pod("p", namespace))
        cluster.create(pod("q", namespace))
    assert [str(n) for n in notices] == noticed
    created = cluster.get_namespace(namespace or "default")
    assert created is not None
    assert created.metadata.labels == {"kubernetes.io/metadata.name": namespace or "default"}


@pytest.mark.parametrize("namespace", ["kube-system", None])
def test_strict_namespaces_keep_the_system_namespaces(
    clock: FakeClock, namespace: str | None
) -> None:
    cluster = MemoryCluster(clock, strict_namespaces=True)
    with collecting_notices() as notices:
        cluster.create(pod("p", namespace))
    assert notices == []
    assert cluster.get_namespace(namespace or "default") is not None


def test_strict_namespaces_refuse_a_namespace_not_created_yet(clock: FakeClock) -> None:
    cluster = MemoryCluster(clock, strict_namespaces=True)
    with collecting_notices() as notices, pytest.raises(NotFoundError) as refused:
        cluster.create(pod("p", "team"))
    assert str(refused.value) == 'namespaces "team" not found'
    assert notices == []
    assert cluster.get_namespace("team") is None
    assert cluster.try_get("Pod", "team", "p") is None
    # Once the Namespace exists, the same pod goes in.
    cluster.create(obj("Namespace", "team"))
    cluster.create(pod("p", "team"))
    assert cluster.try_get("Pod", "team", "p") is not None
