"""Volume sources and claim specs shared by Pod volumes, PersistentVolumes and claims."""

from __future__ import annotations

from pydantic import Field

from .meta import KubeModel, LabelSelector, NullableDict, NullableList, ObjectMeta
from .quantity import Quantity

__all__ = [
    "ACCESS_MODES",
    "AWSElasticBlockStoreVolumeSource",
    "AccessMode",
    "AzureDiskVolumeSource",
    "CSIPersistentVolumeSource",
    "CSIVolumeSource",
    "CinderVolumeSource",
    "EphemeralVolumeSource",
    "GCEPersistentDiskVolumeSource",
    "ISCSIVolumeSource",
    "InTreeVolumeSources",
    "PersistentVolumeClaimSpec",
    "PersistentVolumeClaimTemplate",
    "RBDVolumeSource",
    "VolumeResourceRequirements",
]

ACCESS_MODES: tuple[str, ...] = (
    "ReadWriteOnce",
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOncePod",
)
AccessMode = str
"""An access mode: one of ``ACCESS_MODES`` once validated (the model keeps any string so
that validation, not parsing, words the refusal as the API server does)."""


# --- volume sources (shared by Pod volumes and PersistentVolumes) -------------------------


class GCEPersistentDiskVolumeSource(KubeModel):
    """``v1.GCEPersistentDiskVolumeSource`` (in-tree; VolumeRestrictions checks it)."""

    pd_name: str = ""
    fs_type: str | None = None
    partition: int = 0
    read_only: bool = False


class AWSElasticBlockStoreVolumeSource(KubeModel):
    """``v1.AWSElasticBlockStoreVolumeSource`` (in-tree)."""

    volume_id: str = Field(default="", alias="volumeID")
    fs_type: str | None = None
    partition: int = 0
    read_only: bool = False


class RBDVolumeSource(KubeModel):
    """``v1.RBDVolumeSource``; the pool defaults to ``rbd`` as the API server defaults it."""

    monitors: NullableList[str] = Field(default_factory=list)
    image: str = ""
    pool: str = "rbd"
    user: str = "admin"
    read_only: bool = False


class ISCSIVolumeSource(KubeModel):
    """``v1.ISCSIVolumeSource``."""

    target_portal: str = ""
    iqn: str = ""
    lun: int = 0
    read_only: bool = False


class AzureDiskVolumeSource(KubeModel):
    """``v1.AzureDiskVolumeSource`` (in-tree, migrated to ``disk.csi.azure.com``)."""

    disk_name: str = ""
    disk_uri: str = Field(default="", alias="diskURI")
    kind: str | None = None
    read_only: bool = False


class CinderVolumeSource(KubeModel):
    """``v1.CinderVolumeSource`` (in-tree, migrated to ``cinder.csi.openstack.org``)."""

    volume_id: str = Field(default="", alias="volumeID")
    read_only: bool = False


class CSIVolumeSource(KubeModel):
    """``v1.CSIVolumeSource``: an inline (ephemeral) CSI volume of a pod."""

    driver: str = ""
    read_only: bool = False
    fs_type: str | None = None
    volume_attributes: NullableDict[str, str] = Field(default_factory=dict)


class CSIPersistentVolumeSource(KubeModel):
    """``v1.CSIPersistentVolumeSource``: the driver and the volume's handle in it."""

    driver: str = ""
    volume_handle: str = ""
    read_only: bool = False
    fs_type: str | None = None
    volume_attributes: NullableDict[str, str] = Field(default_factory=dict)


class InTreeVolumeSources(KubeModel):
    """The in-tree disk sources a Pod volume or a PersistentVolume may have, as the volume
    plugins read them (disk conflicts, CSI migration)."""

    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    azure_disk: AzureDiskVolumeSource | None = None
    cinder: CinderVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None


# --- claims -------------------------------------------------------------------------------


class VolumeResourceRequirements(KubeModel):
    """``v1.VolumeResourceRequirements``: ``requests.storage`` is the size asked for."""

    requests: NullableDict[str, Quantity] = Field(default_factory=dict)
    limits: NullableDict[str, Quantity] = Field(default_factory=dict)


class PersistentVolumeClaimSpec(KubeModel):
    """``v1.PersistentVolumeClaimSpec``.

    ``storage_class_name`` None (unset) and ``""`` differ as upstream: unset takes the
    default StorageClass, ``""`` asks for a PV without class.
    """

    access_modes: NullableList[AccessMode] = Field(default_factory=list)
    selector: LabelSelector | None = None
    resources: VolumeResourceRequirements = Field(default_factory=VolumeResourceRequirements)
    volume_name: str = ""
    storage_class_name: str | None = None
    volume_mode: str = "Filesystem"

    def storage_request(self) -> int:
        """``resources.requests.storage`` in bytes (0 when not requested)."""
        q = self.resources.requests.get("storage")
        return q.value() if q is not None else 0


class PersistentVolumeClaimTemplate(KubeModel):
    """``v1.PersistentVolumeClaimTemplate``: the claim a generic ephemeral volume makes."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = Field(default_factory=PersistentVolumeClaimSpec)


class EphemeralVolumeSource(KubeModel):
    """``v1.EphemeralVolumeSource``: a claim ``<pod>-<volume>`` owned by the pod."""

    volume_claim_template: PersistentVolumeClaimTemplate | None = None
