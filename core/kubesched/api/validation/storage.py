"""Storage kinds validated as kube-apiserver v1.36 does: PersistentVolume, PersistentVolumeClaim
(``pkg/apis/core/validation``), StorageClass, CSINode, CSIDriver, CSIStorageCapacity
(``pkg/apis/storage/validation``).

Only the fields kubesched models are checked (the volume sources the volume plugins
read: hostPath, gcePersistentDisk, awsElasticBlockStore, nfs, rbd, iscsi, cinder,
azureDisk, local, csi); the wording, field paths and quirks are upstream's (a GCE disk is
reported under ``spec.persistentDisk``, a CSINode's topology keys under the driver).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..quantity import Quantity
from ..storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    TopologySelectorTerm,
)
from ..volumes import ACCESS_MODES
from .field import FieldError, duplicate, forbidden, invalid, not_supported, required, too_long
from .meta import validate_label_selector, validate_object_meta
from .objects import register_validator
from .pod import validate_node_selector
from .syntax import (
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    min_error,
    validate_label_name,
)

__all__ = ["validate_csi_driver_name"]

_SORTED_ACCESS_MODES = tuple(sorted(ACCESS_MODES))
_VOLUME_MODES = ("Block", "Filesystem")
_CSI_DRIVER_NAME_MAX_LENGTH = 63
_CSI_NODE_ID_MAX_LENGTH = 256
_MAX_PARAMETERS = 512
_MAX_PARAMETERS_SIZE = 256 * 1024
_AZURE_MANAGED_URI = (
    "/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/"
    "{disk-id}"
)
_AZURE_BLOB_URI = "https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"
_ISCSI_FORMATS = {
    "iqn": re.compile(r"iqn\.\d{4}-\d{2}\.([A-Za-z0-9.-]+)(:[^,;*&$|\s]+)"),
    "eui": re.compile(r"eui.[A-Za-z0-9]{16}"),
    "naa": re.compile(r"naa.[A-Za-z0-9]{32}"),
}


def _class_name(value: str, path: str) -> list[FieldError]:
    # ValidateClassName: a DNS subdomain.
    return [invalid(path, value, msg) for msg in is_dns1123_subdomain(value)]


def validate_csi_driver_name(name: str, path: str) -> list[FieldError]:
    """``ValidateCSIDriverName``: required, at most 63 bytes, a DNS subdomain once
    lower-cased."""
    if not name:
        return [required(path)]
    errs: list[FieldError] = []
    if len(name) > _CSI_DRIVER_NAME_MAX_LENGTH:
        errs.append(too_long(path, name, _CSI_DRIVER_NAME_MAX_LENGTH))
    errs.extend(invalid(path, name, msg) for msg in is_dns1123_subdomain(name.lower()))
    return errs


def _access_modes(modes: Sequence[str], path: str, required_detail: str) -> list[FieldError]:
    if not modes:
        return [required(path, required_detail)]
    errs = [not_supported(path, m, _SORTED_ACCESS_MODES) for m in modes if m not in ACCESS_MODES]
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        errs.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def _positive(q: Quantity, path: str) -> list[FieldError]:
    # ValidatePositiveQuantityValue.
    return [] if q.nanos > 0 else [invalid(path, q.canonical(), "must be greater than zero")]


# --- persistent volumes -----------------------------------------------------------------------


def _path_field(source: Mapping[str, Any], key: str) -> str:
    value = source.get(key)
    return value if isinstance(value, str) else ""


def _no_backsteps(value: str, path: str) -> list[FieldError]:
    # validatePathNoBacksteps: no ".." element.
    if ".." in value.replace("\\", "/").split("/"):
        return [invalid(path, value, "must not contain '..'")]
    return []


def _partition(value: int, path: str) -> list[FieldError]:
    if 0 <= value <= 255:
        return []
    return [invalid(path, value, "must be between 1 and 255, inclusive")]


def _host_path(source: Mapping[str, Any], path: str) -> list[FieldError]:
    value = _path_field(source, "path")
    if not value:
        return [required(f"{path}.path")]
    return _no_backsteps(value, f"{path}.path")


def _local(source: Mapping[str, Any], path: str) -> list[FieldError]:
    value = _path_field(source, "path")
    if not value:
        return [required(f"{path}.path")]
    return _no_backsteps(value, f"{path}.path")


def _nfs(source: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not _path_field(source, "server"):
        errs.append(required(f"{path}.server"))
    value = _path_field(source, "path")
    if not value:
        errs.append(required(f"{path}.path"))
    elif not posixpath.isabs(value):
        errs.append(invalid(f"{path}.path", value, "must be an absolute path"))
    return errs


def _iscsi(source: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not source.target_portal:
        errs.append(required(f"{path}.targetPortal"))
    iqn = source.iqn
    if not iqn:
        errs.append(required(f"{path}.iqn"))
    else:
        pattern = _ISCSI_FORMATS.get(iqn[:3])
        if pattern is None or not pattern.fullmatch(iqn):
            errs.append(invalid(f"{path}.iqn", iqn, "must be valid format"))
    if not 0 <= source.lun <= 255:
        errs.append(invalid(f"{path}.lun", source.lun, "must be between 0 and 255, inclusive"))
    return errs


def _azure_disk(source: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not source.disk_name:
        errs.append(required(f"{path}.diskName"))
    uri = source.disk_uri
    if not uri:
        errs.append(required(f"{path}.diskURI"))
    # The kind defaults to Shared: a blob URI; a Managed disk is named by its resource ID.
    if source.kind == "Managed":
        if not uri.startswith("/subscriptions/"):
            errs.append(not_supported(f"{path}.diskURI", uri, (_AZURE_MANAGED_URI,)))
    elif not uri.startswith("https://"):
        errs.append(not_supported(f"{path}.diskURI", uri, (_AZURE_BLOB_URI,)))
    return errs


def _volume_sources(spec: Any) -> list[tuple[str, Any]]:
    """The sources that are set, in upstream's order of checking, with their paths."""
    sources = (
        ("hostPath", spec.host_path),
        ("persistentDisk", spec.gce_persistent_disk),
        ("awsElasticBlockStore", spec.aws_elastic_block_store),
        ("glusterfs", spec.glusterfs),
        ("flocker", spec.flocker),
        ("nfs", spec.nfs),
        ("rbd", spec.rbd),
        ("quobyte", spec.quobyte),
        ("cephfs", spec.cephfs),
        ("iscsi", spec.iscsi),
        ("cinder", spec.cinder),
        ("fc", spec.fc),
        ("flexVolume", spec.flex_volume),
        ("azureFile", spec.azure_file),
        ("vsphereVolume", spec.vsphere_volume),
        ("photonPersistentDisk", spec.photon_persistent_disk),
        ("portworxVolume", spec.portworx_volume),
        ("azureDisk", spec.azure_disk),
        ("scaleIO", spec.scale_io),
        ("local", spec.local),
        ("storageos", spec.storageos),
        ("csi", spec.csi),
    )
    return [(name, source) for name, source in sources if source is not None]


# Sources no model reads: they count as the volume's one source; their own fields'
# rules are not checked.
_UNCHECKED_SOURCES = frozenset(
    {
        "glusterfs",
        "flocker",
        "quobyte",
        "cephfs",
        "fc",
        "flexVolume",
        "azureFile",
        "vsphereVolume",
        "photonPersistentDisk",
        "portworxVolume",
        "scaleIO",
        "storageos",
    }
)


def _volume_source(name: str, source: Any, path: str) -> list[FieldError]:
    if name in _UNCHECKED_SOURCES:
        return []
    if name == "hostPath":
        return _host_path(source, path)
    if name == "local":
        return _local(source, path)
    if name == "nfs":
        return _nfs(source, path)
    if name == "iscsi":
        return _iscsi(source, path)
    if name == "azureDisk":
        return _azure_disk(source, path)
    if name in ("persistentDisk", "awsElasticBlockStore"):
        disk = source.pd_name if name == "persistentDisk" else source.volume_id
        key = "pdName" if name == "persistentDisk" else "volumeID"
        errs = [required(f"{path}.{key}")] if not disk else []
        return errs + _partition(source.partition, f"{path}.partition")
    if name == "rbd":
        errs = [required(f"{path}.monitors")] if not source.monitors else []
        return errs + ([required(f"{path}.image")] if not source.image else [])
    if name == "cinder":
        return [required(f"{path}.volumeID")] if not source.volume_id else []
    # csi
    errs = validate_csi_driver_name(source.driver, f"{path}.driver")
    return errs + ([required(f"{path}.volumeHandle")] if not source.volume_handle else [])


@register_validator("PersistentVolume")
def _persistent_volume(pv: PersistentVolume) -> list[FieldError]:
    errs = validate_object_meta(pv.metadata, namespaced=False)
    spec = pv.spec
    errs.extend(_access_modes(spec.access_modes, "spec.accessModes", ""))
    capacity = spec.capacity
    if not capacity:
        errs.append(required("spec.capacity"))
    if "storage" not in capacity or len(capacity) > 1:
        shown = {k: capacity[k].canonical() for k in sorted(capacity)} if capacity else None
        errs.append(not_supported("spec.capacity", shown, ("storage",)))
    for name in sorted(capacity):
        q, qpath = capacity[name], f"spec.capacity[{name}]"
        if q.value() < 0:
            errs.append(invalid(qpath, q.value(), "must be a valid resource quantity"))
        errs.extend(_positive(q, qpath))
    policy = spec.persistent_volume_reclaim_policy
    if policy not in ("Delete", "Recycle", "Retain"):
        errs.append(
            not_supported(
                "spec.persistentVolumeReclaimPolicy", policy, ("Delete", "Recycle", "Retain")
            )
        )
    if spec.node_affinity is not None:
        if spec.node_affinity.required is None:
            errs.append(
                required("spec.nodeAffinity.required", "must specify required node constraints")
            )
        else:
            errs.extend(
                validate_node_selector(spec.node_affinity.required, "spec.nodeAffinity.required")
            )
    sources = _volume_sources(spec)
    if not sources:
        errs.append(required("spec", "must specify a volume type"))
    for i, (name, source) in enumerate(sources):
        if i:
            errs.append(forbidden(f"spec.{name}", "may not specify more than 1 volume type"))
        else:
            errs.extend(_volume_source(name, source, f"spec.{name}"))
            if name == "local" and spec.node_affinity is None:
                errs.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
    if spec.storage_class_name:
        errs.extend(_class_name(spec.storage_class_name, "spec.storageClassName"))
    if spec.volume_mode not in _VOLUME_MODES:
        errs.append(not_supported("spec.volumeMode", spec.volume_mode, _VOLUME_MODES))
    return errs


@register_validator("PersistentVolumeClaim")
def _persistent_volume_claim(pvc: PersistentVolumeClaim) -> list[FieldError]:
    errs = validate_object_meta(pvc.metadata, namespaced=True)
    spec = pvc.spec
    errs.extend(validate_label_selector(spec.selector, "spec.selector"))
    errs.extend(
        _access_modes(spec.access_modes, "spec.accessModes", "at least 1 access mode is required")
    )
    storage = spec.resources.requests.get("storage")
    if storage is None:
        errs.append(required("spec.resources[storage]"))
    else:
        errs.extend(_positive(storage, "spec.resources[storage]"))
    if spec.storage_class_name:
        errs.extend(_class_name(spec.storage_class_name, "spec.storageClassName"))
    if spec.volume_mode not in _VOLUME_MODES:
        errs.append(not_supported("spec.volumeMode", spec.volume_mode, _VOLUME_MODES))
    return errs


# --- classes and CSI --------------------------------------------------------------------------


def _topology_term(term: TopologySelectorTerm, path: str) -> tuple[list[FieldError], dict]:
    """``ValidateTopologySelectorTerm``: the errors and the term as key -> set of values."""
    errs: list[FieldError] = []
    exprs: dict[str, frozenset[str]] = {}
    for i, req in enumerate(term.match_label_expressions):
        rpath = f"{path}.matchLabelExpressions[{i}]"
        if not req.values:
            errs.append(required(f"{rpath}.values"))
        seen: set[str] = set()
        for j, value in enumerate(req.values):
            if value in seen:
                errs.append(duplicate(f"{rpath}.values[{j}]", value))
            seen.add(value)
            errs.extend(
                invalid(f"{rpath}.values[{j}]", value, msg) for msg in is_valid_label_value(value)
            )
        errs.extend(validate_label_name(req.key, f"{rpath}.key"))
        if req.key in exprs:
            errs.append(duplicate(f"{rpath}.key", req.key))
        exprs[req.key] = frozenset(req.values)
    return errs, exprs


@register_validator("StorageClass")
def _storage_class(sc: StorageClass) -> list[FieldError]:
    errs = validate_object_meta(sc.metadata, namespaced=False)
    if not sc.provisioner:
        errs.append(required("provisioner"))
    else:
        errs.extend(
            invalid("provisioner", sc.provisioner, msg)
            for msg in is_qualified_name(sc.provisioner.lower())
        )
    params = sc.parameters
    if len(params) > _MAX_PARAMETERS:
        errs.append(too_long("parameters", "", _MAX_PARAMETERS))
    else:
        errs.extend(invalid("parameters", "", "field can not be empty.") for k in params if not k)
        if sum(len(k.encode()) + len(v.encode()) for k, v in params.items()) > _MAX_PARAMETERS_SIZE:
            errs.append(too_long("parameters", "", _MAX_PARAMETERS_SIZE))
    if sc.reclaim_policy not in ("Delete", "Retain"):
        errs.append(not_supported("reclaimPolicy", sc.reclaim_policy, ("Delete", "Retain")))
    if sc.volume_binding_mode not in ("Immediate", "WaitForFirstConsumer"):
        errs.append(
            not_supported(
                "volumeBindingMode", sc.volume_binding_mode, ("Immediate", "WaitForFirstConsumer")
            )
        )
    # Upstream compares each term with the earlier ones in a list that starts with as
    # many empty entries as there are terms: an empty term is a duplicate once per term.
    terms: list[dict] = [{} for _ in sc.allowed_topologies]
    for i, term in enumerate(sc.allowed_topologies):
        path = f"allowedTopologies[{i}]"
        term_errs, exprs = _topology_term(term, path)
        errs.extend(term_errs)
        errs.extend(duplicate(f"{path}.matchLabelExpressions", "") for t in terms if t == exprs)
        terms.append(exprs)
    return errs


@register_validator("CSINode")
def _csi_node(node: CSINode) -> list[FieldError]:
    errs = validate_object_meta(node.metadata, namespaced=False)
    names: set[str] = set()
    for i, driver in enumerate(node.spec.drivers):
        path = f"spec.drivers[{i}]"
        errs.extend(validate_csi_driver_name(driver.name, f"{path}.name"))
        if not driver.node_id:
            errs.append(required(f"{path}.nodeID"))
        elif len(driver.node_id) > _CSI_NODE_ID_MAX_LENGTH:
            errs.append(
                invalid(
                    f"{path}.nodeID",
                    driver.node_id,
                    f"must be {_CSI_NODE_ID_MAX_LENGTH} characters or less",
                )
            )
        count = driver.allocatable.count if driver.allocatable is not None else None
        if count is not None and count < 0:
            errs.append(invalid(f"{path}.allocatable.count", count, min_error(0)))
        keys: set[str] = set()
        for key in driver.topology_keys:
            errs.extend(invalid(path, key, msg) for msg in is_qualified_name(key))
            if key in keys:
                errs.append(duplicate(path, key))
            keys.add(key)
        if driver.name in names:
            errs.append(duplicate(f"{path}.name", driver.name))
        names.add(driver.name)
    return errs


@register_validator("CSIDriver")
def _csi_driver(driver: CSIDriver) -> list[FieldError]:
    errs = validate_object_meta(driver.metadata, namespaced=False)
    spec = driver.spec
    policies = ("File", "None", "ReadWriteOnceWithFSType")
    if spec.fs_group_policy is not None and spec.fs_group_policy not in policies:
        errs.append(not_supported("spec.fsGroupPolicy", spec.fs_group_policy, policies))
    modes = ("Persistent", "Ephemeral")
    errs.extend(
        not_supported("spec.volumeLifecycleModes", mode, modes)
        for mode in spec.volume_lifecycle_modes
        if mode not in modes
    )
    return errs


@register_validator("CSIStorageCapacity")
def _csi_storage_capacity(cap: CSIStorageCapacity) -> list[FieldError]:
    errs = validate_object_meta(cap.metadata, namespaced=True)
    errs.extend(validate_label_selector(cap.node_topology, "nodeTopology"))
    errs.extend(_class_name(cap.storage_class_name, "storageClassName"))
    if cap.capacity is not None and cap.capacity.nanos < 0:
        errs.append(invalid("capacity", cap.capacity.canonical(), min_error(0)))
    return errs
