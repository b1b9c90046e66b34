"""Storage objects for the volume plugins' tests: classes, PVs, claims, CSINodes, capacity."""

from __future__ import annotations

from typing import Any

from kubesched.api import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
)
from kubesched.testing import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
DRIVER = "disk.csi.example.com"


def storage_class(
    name: str,
    mode: str = "WaitForFirstConsumer",
    provisioner: str = DRIVER,
    zones: list[str] | None = None,
) -> StorageClass:
    doc: dict[str, Any] = {
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if zones is not None:
        doc["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}]
    return StorageClass.model_validate(doc)


def pv(
    name: str,
    size: str = "10Gi",
    cls: str = "",
    *,
    zone: str | None = None,
    claim: str | None = None,
    claim_uid: str | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    labels: dict[str, str] | None = None,
    phase: str | None = None,
    **source: Any,
) -> PersistentVolume:
    # A PV needs a volume source; a hostPath one unless the test gives its own.
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": cls,
        **(source or {"hostPath": {"path": f"/mnt/{name}"}}),
    }
    if zone is not None:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
                ]
            }
        }
    if claim is not None:
        spec["claimRef"] = {"namespace": "default", "name": claim, "uid": claim_uid}
    if phase is None:
        phase = "Bound" if claim is not None else "Available"
    meta = {"name": name, "labels": labels or {}}
    return PersistentVolume.model_validate(
        {"metadata": meta, "spec": spec, "status": {"phase": phase}}
    )


def pvc(
    name: str,
    size: str = "10Gi",
    cls: str | None = "",
    *,
    volume: str = "",
    bound: bool | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    annotations: dict[str, str] | None = None,
    uid: str | None = None,
    owner_uid: str | None = None,
    deleting: bool = False,
) -> PersistentVolumeClaim:
    ann = dict(annotations or {})
    if bound if bound is not None else bool(volume):
        ann["pv.kubernetes.io/bind-completed"] = "yes"
    meta: dict[str, Any] = {"name": name, "namespace": "default", "annotations": ann}
    if uid is not None:
        meta["uid"] = uid
    if owner_uid is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner_uid, "controller": True}
        ]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
        "volumeName": volume,
    }
    if cls is not None:
        spec["storageClassName"] = cls
    return PersistentVolumeClaim.model_validate(
        {"metadata": meta, "spec": spec, "status": {"phase": "Bound" if volume else "Pending"}}
    )


def csi_node(node: str, driver: str = DRIVER, count: int | None = None, **ann: str) -> CSINode:
    entry: dict[str, Any] = {"name": driver, "nodeID": node, "topologyKeys": [ZONE]}
    if count is not None:
        entry["allocatable"] = {"count": count}
    return CSINode.model_validate(
        {"metadata": {"name": node, "annotations": ann}, "spec": {"drivers": [entry]}}
    )


def csi_driver(name: str = DRIVER, storage_capacity: bool = True) -> CSIDriver:
    return CSIDriver.model_validate(
        {"metadata": {"name": name}, "spec": {"storageCapacity": storage_capacity}}
    )


def capacity(name: str, cls: str, zone: str, size: str, max_size: str | None = None):
    doc: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": cls,
        "nodeTopology": {"matchLabels": {ZONE: zone}},
        "capacity": size,
    }
    if max_size is not None:
        doc["maximumVolumeSize"] = max_size
    return CSIStorageCapacity.model_validate(doc)


def zoned_nodes(*zones: str) -> list:
    """One node per zone, named ``n-<zone>``."""
    return [make_node(f"n-{z}").labels({ZONE: z}).obj() for z in zones]


def pod_with(*volumes: dict[str, Any], name: str = "p", uid: str = "uid-p", node: str = "") -> Pod:
    """A pod with the given volume manifests (``{"name": ..., <source>: {...}}``)."""
    b = make_pod(name).uid(uid)
    if node:
        b.node(node)
    doc = b.manifest()
    doc["spec"]["volumes"] = list(volumes)
    return Pod.model_validate(doc)


def claim_volume(claim: str, name: str | None = None) -> dict[str, Any]:
    return {"name": name or claim, "persistentVolumeClaim": {"claimName": claim}}
