"""The embedded cluster's storage controllers: binding, provisioning, claims of workloads,
reclaim on deletion."""

from __future__ import annotations

import pytest

from kubesched.api import ANN_SELECTED_NODE, NOT_SUPPORTED_PROVISIONER, StatefulSet, parse_object
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.memory.volumes import PROVISIONER_RUNNING_ANNOTATION
from kubesched.clock import FakeClock
from kubesched.notices import collecting_notices
from kubesched.simulate.driver import simulate
from tests.plugins.volume_objects import (
    capacity,
    claim_volume,
    csi_driver,
    csi_node,
    pod_with,
    pv,
    pvc,
    storage_class,
    zoned_nodes,
)


def cluster(*objects) -> MemoryCluster:
    c = MemoryCluster(FakeClock())
    assert c.apply(list(objects)) == []
    return c


def claim(c: MemoryCluster, name: str):
    return c.get("PersistentVolumeClaim", "default", name)


def volume(c: MemoryCluster, name: str):
    return c.try_get("PersistentVolume", None, name)


def test_immediate_claim_binds_the_smallest_matching_volume() -> None:
    c = cluster(
        storage_class("fast", mode="Immediate"),
        pv("big", "100Gi", cls="fast"),
        pv("small", "10Gi", cls="fast"),
        pv("tiny", "1Gi", cls="fast"),
        pvc("data", "5Gi", cls="fast"),
    )
    got = claim(c, "data")
    assert (got.spec.volume_name, got.status.phase) == ("small", "Bound")
    assert got.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert str(got.status.capacity["storage"]) == "10Gi"
    bound = volume(c, "small")
    assert (bound.spec.claim_ref.name, bound.spec.claim_ref.uid) == ("data", got.metadata.uid)
    assert bound.status.phase == "Bound"
    assert volume(c, "big").status.phase == "Available"


def test_immediate_claim_without_volume_is_provisioned() -> None:
    c = cluster(storage_class("fast", mode="Immediate", zones=["b"]), pvc("data", cls="fast"))
    got = claim(c, "data")
    assert got.status.phase == "Bound"
    made = volume(c, got.spec.volume_name)
    assert made.metadata.annotations["pv.kubernetes.io/provisioned-by"] == "disk.csi.example.com"
    (term,) = made.spec.node_affinity.required.node_selector_terms
    assert term.match_expressions[0].values == ["b"]
    assert made.spec.persistent_volume_reclaim_policy == "Delete"


def test_wait_for_first_consumer_waits_for_the_selected_node() -> None:
    c = cluster(*zoned_nodes("a", "b"), *(csi_node(f"n-{z}") for z in "ab"), storage_class("w"))
    c.create(pvc("data", cls="w"))
    assert claim(c, "data").status.phase == "Pending"
    assert c.objects("PersistentVolume") == []
    selected = claim(c, "data").model_copy(deep=True)
    selected.metadata.annotations[ANN_SELECTED_NODE] = "n-b"
    c.update(selected)
    got = claim(c, "data")
    assert got.status.phase == "Bound"
    (term,) = volume(c, got.spec.volume_name).spec.node_affinity.required.node_selector_terms
    assert [(r.key, r.values) for r in term.match_expressions] == [
        ("topology.kubernetes.io/zone", ["b"])
    ]
    assert [e.reason for e in c.events] == ["ExternalProvisioning", "ProvisioningSucceeded"]


@pytest.mark.parametrize(
    ("room", "provisioned"), [("50Gi", True), ("5Gi", False)], ids=["room", "no-room"]
)
def test_provisioning_is_bounded_by_storage_capacity(room, provisioned) -> None:
    c = cluster(
        *zoned_nodes("a"),
        storage_class("w"),
        csi_driver(),
        capacity("cap-a", "w", "a", room),
        pvc("data", "20Gi", cls="w", annotations={ANN_SELECTED_NODE: "n-a"}),
    )
    got = claim(c, "data")
    left = c.get("CSIStorageCapacity", "kube-system", "cap-a").capacity
    if provisioned:
        assert got.status.phase == "Bound"
        assert str(left) == str(30 * 1024**3)
    else:
        assert got.status.phase == "Pending" and ANN_SELECTED_NODE not in got.metadata.annotations
        assert [e.reason for e in c.events] == ["ExternalProvisioning", "ProvisioningFailed"]
        assert str(left) == "5Gi"


def test_claim_pre_bound_to_a_volume() -> None:
    c = cluster(pv("mine", cls=""), pvc("data", cls="", volume="mine", bound=False))
    got = claim(c, "data")
    assert (got.spec.volume_name, got.status.phase) == ("mine", "Bound")
    assert volume(c, "mine").spec.claim_ref.name == "data"


def test_default_class_is_assigned_even_later() -> None:
    c = cluster(pvc("data", cls=None))
    assert claim(c, "data").spec.storage_class_name is None
    default = storage_class("std", mode="Immediate")
    default.metadata.annotations["storageclass.kubernetes.io/is-default-class"] = "true"
    c.create(default)
    got = claim(c, "data")
    assert (got.spec.storage_class_name, got.status.phase) == ("std", "Bound")


@pytest.mark.parametrize(
    ("policy", "after"),
    [("Delete", None), ("Retain", "Released"), ("Recycle", "Available")],
    ids=["delete", "retain", "recycle"],
)
def test_deleting_a_claim_reclaims_its_volume(policy, after) -> None:
    static = pv("vol", cls="fast")
    static.spec.persistent_volume_reclaim_policy = policy
    c = cluster(
        storage_class("fast", mode="Immediate", provisioner=NOT_SUPPORTED_PROVISIONER), static
    )
    c.create(pvc("data", cls="fast"))
    assert claim(c, "data").spec.volume_name == "vol"
    c.delete("PersistentVolumeClaim", "default", "data")
    left = volume(c, "vol")
    assert (left.status.phase if left is not None else None) == after


def test_deleting_the_volume_loses_the_claim() -> None:
    c = cluster(
        storage_class("fast", mode="Immediate", provisioner=NOT_SUPPORTED_PROVISIONER),
        pv("vol", cls="fast"),
    )
    c.create(pvc("data", cls="fast"))
    c.delete("PersistentVolume", None, "vol")
    assert claim(c, "data").status.phase == "Lost"


def _stateful_set(when_deleted: str, when_scaled: str = "Retain") -> StatefulSet:
    return parse_object(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 2,
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {
                        "containers": [{"name": "c", "image": "busybox"}],
                        "volumes": [{"name": "data", "emptyDir": {}}],
                    },
                },
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "storageClassName": "w",
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}},
                        },
                    }
                ],
                "persistentVolumeClaimRetentionPolicy": {
                    "whenDeleted": when_deleted,
                    "whenScaled": when_scaled,
                },
            },
        }
    )  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("when_deleted", "kept"), [("Retain", True), ("Delete", False)], ids=["retain", "delete"]
)
def test_stateful_set_creates_its_claims(when_deleted, kept) -> None:
    c = cluster(storage_class("w"), _stateful_set(when_deleted))
    pods = {p.name: p for p in c.pods()}
    assert sorted(pods) == ["db-0", "db-1"]
    for i in (0, 1):
        (vol,) = pods[f"db-{i}"].spec.volumes  # the template's volume is replaced
        assert vol.persistent_volume_claim.claim_name == f"data-db-{i}"
        got = claim(c, f"data-db-{i}")
        assert got.metadata.labels == {"app": "db"}
        assert got.status.phase == "Pending"  # WaitForFirstConsumer
    c.delete("StatefulSet", "default", "db")
    remaining = [o.name for o in c.objects("PersistentVolumeClaim")]
    assert remaining == (["data-db-0", "data-db-1"] if kept else [])


@pytest.mark.parametrize(
    ("when_scaled", "left"),
    [("Retain", ["data-db-0", "data-db-1"]), ("Delete", ["data-db-0"])],
    ids=["retain", "delete"],
)
def test_stateful_set_scale_down_follows_when_scaled(when_scaled, left) -> None:
    c = cluster(storage_class("w"), _stateful_set("Retain", when_scaled))
    sts = c.get("StatefulSet", "default", "db").model_copy(deep=True)
    sts.spec.replicas = 1
    c.update(sts)
    assert [o.name for o in c.objects("PersistentVolumeClaim")] == left


def test_ephemeral_volume_gets_a_claim_owned_by_the_pod() -> None:
    template = {
        "spec": {
            "storageClassName": "w",
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        }
    }
    c = cluster(
        storage_class("w"),
        pod_with({"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}),
    )
    got = claim(c, "p-scratch")
    owner = got.metadata.controller_ref
    pod = c.get("Pod", "default", "p")
    assert (owner.kind, owner.uid) == ("Pod", pod.metadata.uid)
    assert got.spec.storage_class_name == "w"


# --- which classes the simulated provisioner serves ------------------------------------------

WAITING = (
    "Waiting for a volume to be created either by the external provisioner '{}' or manually "
    "by the system administrator. If volume creation is delayed, please verify that the "
    "provisioner is running and correctly registered."
)


@pytest.mark.parametrize(
    ("provisioner", "annotation", "provisioned", "noticed"),
    [
        ("disk.csi.example.com", None, True, False),
        ("disk.csi.example.com", "false", False, False),
        ("disk.csi.example.com", "true", True, False),
        ("k8s.io/minikube-hostpath", None, False, True),
    ],
    ids=["csi-driver", "switched-off", "switched-on", "not-a-csi-driver-name"],
)
def test_claims_of_a_class_without_a_provisioner_stay_pending(
    provisioner: str, annotation: str | None, provisioned: bool, noticed: bool
) -> None:
    sc = storage_class("std", mode="Immediate", provisioner=provisioner)
    if annotation is not None:
        sc.metadata.annotations[PROVISIONER_RUNNING_ANNOTATION] = annotation
    with collecting_notices() as notices:
        c = cluster(sc, pvc("data", cls="std"))
    got = claim(c, "data")
    assert got.status.phase == ("Bound" if provisioned else "Pending")
    assert bool(c.objects("PersistentVolume")) == provisioned
    waiting = [e for e in c.events if e.reason == "ExternalProvisioning"]
    assert [(e.type, e.message, e.reporting_controller) for e in waiting] == [
        ("Normal", WAITING.format(provisioner), "persistentvolume-controller")
    ]
    assert [n.obj for n in notices] == (["StorageClass std"] if noticed else [])
    if noticed:
        assert "is not a CSI driver name" in notices[0].message


def test_a_pod_of_an_unserved_claim_stays_pending_and_the_run_goes_on() -> None:
    objects = [
        parse_object(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "n1"},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
            }
        ),
        storage_class("std", mode="Immediate", provisioner="k8s.io/minikube-hostpath"),
        pvc("data", cls="std"),
        pod_with(claim_volume("data"), name="app", uid=""),
    ]
    run = simulate(objects)
    assert run.cluster.get("Pod", "default", "app").spec.node_name is None
    assert claim(run.cluster, "data").status.phase == "Pending"
