"""The REST resource of each kind, as kube-apiserver's messages name it (``pods "x" not found``)."""

from __future__ import annotations

_RESOURCES = {
    "Pod": "pods",
    "Node": "nodes",
    "Namespace": "namespaces",
    "Service": "services",
    "ReplicaSet": "replicasets.apps",
    "Deployment": "deployments.apps",
    "StatefulSet": "statefulsets.apps",
    "DaemonSet": "daemonsets.apps",
    "Job": "jobs.batch",
    "CronJob": "cronjobs.batch",
    "ReplicationController": "replicationcontrollers",
    "PriorityClass": "priorityclasses.scheduling.k8s.io",
    "PodDisruptionBudget": "poddisruptionbudgets.policy",
    "RuntimeClass": "runtimeclasses.node.k8s.io",
    "Lease": "leases.coordination.k8s.io",
    "PersistentVolume": "persistentvolumes",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "StorageClass": "storageclasses.storage.k8s.io",
    "CSINode": "csinodes.storage.k8s.io",
    "CSIDriver": "csidrivers.storage.k8s.io",
    "CSIStorageCapacity": "csistoragecapacities.storage.k8s.io",
    "DeviceClass": "deviceclasses.resource.k8s.io",
    "ResourceClaim": "resourceclaims.resource.k8s.io",
    "ResourceClaimTemplate": "resourceclaimtemplates.resource.k8s.io",
    "ResourceSlice": "resourceslices.resource.k8s.io",
    "DeviceTaintRule": "devicetaintrules.resource.k8s.io",
}


def resource_name(kind: str) -> str:
    """The REST resource of ``kind`` as API error messages name it (``pods``)."""
    return _RESOURCES.get(kind, kind.lower() + "s")
