"""Storage objects the volume plugins read: PV, PVC, StorageClass, CSINode, CSIDriver, capacity."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from .core import NodeSelector
from .meta import KubeModel, KubeObject, LabelSelector, NullableDict, NullableList
from .quantity import Quantity
from .volumes import (
    AccessMode,
    CSIPersistentVolumeSource,
    InTreeVolumeSources,
    PersistentVolumeClaimSpec,
)

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_DEFAULT_STORAGE_CLASS",
    "ANN_MIGRATED_PLUGINS",
    "ANN_PROVISIONED_BY",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_PROVISIONER",
    "NOT_SUPPORTED_PROVISIONER",
    "CSIDriver",
    "CSIDriverSpec",
    "CSINode",
    "CSINodeDriver",
    "CSINodeSpec",
    "CSIStorageCapacity",
    "ObjectReference",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "PersistentVolumeClaimStatus",
    "PersistentVolumeSpec",
    "PersistentVolumeStatus",
    "StorageClass",
    "TopologySelectorLabelRequirement",
    "TopologySelectorTerm",
    "VolumeNodeAffinity",
    "VolumeNodeResources",
]


ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
"""On a PVC: the node the scheduler chose, which asks the provisioner for a volume there."""
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
"""On a PVC: the PV controller finished binding it (a PVC is fully bound with it)."""
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_DEFAULT_STORAGE_CLASS = "storageclass.kubernetes.io/is-default-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
"""On a CSINode: the in-tree volume plugins whose volumes the node handles through CSI."""
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
"""A StorageClass provisioner meaning "no dynamic provisioning" (local volumes)."""


class PersistentVolumeClaimStatus(KubeModel):
    """``v1.PersistentVolumeClaimStatus``: phase Pending, Bound or Lost."""

    phase: Literal["Pending", "Bound", "Lost"] | None = None
    access_modes: NullableList[AccessMode] = Field(default_factory=list)
    capacity: NullableDict[str, Quantity] = Field(default_factory=dict)


class PersistentVolumeClaim(KubeObject):
    """``v1.PersistentVolumeClaim``."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = "v1"
    kind: str | None = "PersistentVolumeClaim"
    spec: PersistentVolumeClaimSpec = Field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = Field(default_factory=PersistentVolumeClaimStatus)

    @property
    def class_name(self) -> str:
        """The claim's class ("" for none), as upstream's ``GetPersistentVolumeClaimClass``
        (the beta annotation wins over the field)."""
        ann = self.metadata.annotations.get("volume.beta.kubernetes.io/storage-class")
        if ann is not None:
            return ann
        return self.spec.storage_class_name or ""


# --- persistent volumes -------------------------------------------------------------------


class ObjectReference(KubeModel):
    """``v1.ObjectReference``: a PV's ``claimRef``."""

    kind: str | None = None
    api_version: str | None = None
    namespace: str | None = None
    name: str = ""
    uid: str | None = None
    resource_version: str | None = None


class VolumeNodeAffinity(KubeModel):
    """``v1.VolumeNodeAffinity``: the nodes from which the volume can be reached."""

    required: NodeSelector | None = None


class PersistentVolumeSpec(InTreeVolumeSources):
    """``v1.PersistentVolumeSpec`` with the sources the scheduler's plugins read."""

    capacity: NullableDict[str, Quantity] = Field(default_factory=dict)
    access_modes: NullableList[AccessMode] = Field(default_factory=list)
    storage_class_name: str = ""
    node_affinity: VolumeNodeAffinity | None = None
    claim_ref: ObjectReference | None = None
    persistent_volume_reclaim_policy: str = "Retain"
    volume_mode: str = "Filesystem"
    mount_options: NullableList[str] = Field(default_factory=list)
    csi: CSIPersistentVolumeSource | None = None
    local: dict[str, Any] | None = None
    host_path: dict[str, Any] | None = None
    nfs: dict[str, Any] | None = None
    # The other in-tree sources v1.36 still accepts: read only to count the volume's
    # sources (a PV has exactly one), as the API server does.
    glusterfs: dict[str, Any] | None = None
    flocker: dict[str, Any] | None = None
    quobyte: dict[str, Any] | None = None
    cephfs: dict[str, Any] | None = None
    fc: dict[str, Any] | None = None
    flex_volume: dict[str, Any] | None = None
    azure_file: dict[str, Any] | None = None
    vsphere_volume: dict[str, Any] | None = None
    photon_persistent_disk: dict[str, Any] | None = None
    portworx_volume: dict[str, Any] | None = None
    scale_io: dict[str, Any] | None = Field(None, alias="scaleIO")
    storageos: dict[str, Any] | None = None

    def storage_capacity(self) -> int:
        """``capacity.storage`` in bytes (0 when not set)."""
        q = self.capacity.get("storage")
        return q.value() if q is not None else 0


class PersistentVolumeStatus(KubeModel):
    """``v1.PersistentVolumeStatus``: phase Pending, Available, Bound, Released or Failed."""

    phase: Literal["Pending", "Available", "Bound", "Released", "Failed"] | None = None
    message: str | None = None
    reason: str | None = None


class PersistentVolume(KubeObject):
    """``v1.PersistentVolume`` (cluster-scoped). Zone/region labels (GA and the legacy
    ``failure-domain.beta`` keys) are read by VolumeZone."""

    namespaced: ClassVar[bool] = False

    api_version: str | None = "v1"
    kind: str | None = "PersistentVolume"
    spec: PersistentVolumeSpec = Field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = Field(default_factory=PersistentVolumeStatus)


# --- classes and CSI ----------------------------------------------------------------------


class TopologySelectorLabelRequirement(KubeModel):
    """``v1.TopologySelectorLabelRequirement``: the label ``key`` has one of ``values``."""

    key: str = ""
    values: NullableList[str] = Field(default_factory=list)


class TopologySelectorTerm(KubeModel):
    """``v1.TopologySelectorTerm``: requirements ANDed."""

    match_label_expressions: NullableList[TopologySelectorLabelRequirement] = Field(
        default_factory=list
    )


class StorageClass(KubeObject):
    """``storage.k8s.io/v1.StorageClass`` (cluster-scoped); fields are top-level."""

    namespaced: ClassVar[bool] = False

    api_version: str | None = "storage.k8s.io/v1"
    kind: str | None = "StorageClass"
    provisioner: str = ""
    parameters: NullableDict[str, str] = Field(default_factory=dict)
    reclaim_policy: str = "Delete"
    volume_binding_mode: str = "Immediate"
    allowed_topologies: NullableList[TopologySelectorTerm] = Field(default_factory=list)
    allow_volume_expansion: bool | None = None
    mount_options: NullableList[str] = Field(default_factory=list)

    @property
    def is_default(self) -> bool:
        """Whether the class carries the default-class annotation."""
        return self.metadata.annotations.get(ANN_DEFAULT_STORAGE_CLASS) == "true"


class VolumeNodeResources(KubeModel):
    """``storage.k8s.io/v1.VolumeNodeResources``: how many volumes of the driver may be
    attached to the node (None: unlimited)."""

    count: int | None = None


class CSINodeDriver(KubeModel):
    """``storage.k8s.io/v1.CSINodeDriver``: a driver installed on the node."""

    name: str = ""
    node_id: str = Field(default="", alias="nodeID")
    topology_keys: NullableList[str] = Field(default_factory=list)
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(KubeModel):
    """``storage.k8s.io/v1.CSINodeSpec``."""

    drivers: NullableList[CSINodeDriver] = Field(default_factory=list)


class CSINode(KubeObject):
    """``storage.k8s.io/v1.CSINode`` (cluster-scoped, named like its Node)."""

    namespaced: ClassVar[bool] = False

    api_version: str | None = "storage.k8s.io/v1"
    kind: str | None = "CSINode"
    spec: CSINodeSpec = Field(default_factory=CSINodeSpec)

    def driver(self, name: str) -> CSINodeDriver | None:
        """The entry of driver ``name``, or None."""
        for d in self.spec.drivers:
            if d.name == name:
                return d
        return None


class CSIDriverSpec(KubeModel):
    """``storage.k8s.io/v1.CSIDriverSpec`` with the API server's defaults."""

    attach_required: bool = True
    storage_capacity: bool = False
    pod_info_on_mount: bool = False
    volume_lifecycle_modes: NullableList[str] = Field(default_factory=lambda: ["Persistent"])
    fs_group_policy: str | None = "ReadWriteOnceWithFSType"
    prevent_pod_scheduling_if_missing: bool | None = None
    """With the VolumeLimitScaling gate on, NodeVolumeLimits keeps the pods that need the
    driver off nodes whose CSINode does not list it."""


class CSIDriver(KubeObject):
    """``storage.k8s.io/v1.CSIDriver`` (cluster-scoped, named like the driver)."""

    namespaced: ClassVar[bool] = False

    api_version: str | None = "storage.k8s.io/v1"
    kind: str | None = "CSIDriver"
    spec: CSIDriverSpec = Field(default_factory=CSIDriverSpec)


class CSIStorageCapacity(KubeObject):
    """``storage.k8s.io/v1.CSIStorageCapacity``: free space of a class in a topology segment.

    ``maximum_volume_size``, when set, bounds a single new volume (upstream prefers it
    over ``capacity``); a missing ``node_topology`` makes the segment unreachable.
    """

    namespaced: ClassVar[bool] = True

    api_version: str | None = "storage.k8s.io/v1"
    kind: str | None = "CSIStorageCapacity"
    node_topology: LabelSelector | None = None
    storage_class_name: str = ""
    capacity: Quantity | None = None
    maximum_volume_size: Quantity | None = None
