"""The storage gates StorageCapacityScoring and VolumeLimitScaling: the cases the real v1.36.2
kube-scheduler was recorded on, in ``tests/fixtures/scheduler/storage-gates.json`` (written
by ``tests/kube/test_storage_gates.py`` with ``KUBESCHED_RECORD=1``), and that
``tests/scheduler/test_storage_gates.py`` holds kubesched to.

Three identical nodes ``n0``..``n2`` (labelled with their hostname), so that only the
volume plugins tell them apart. Each case creates its objects in a namespace named after
it, then one pod ``app``; what is recorded is the node chosen for it (its ``nodeName``, or,
for a claim to provision that no provisioner serves on the recording's control plane, the
``volume.kubernetes.io/selected-node`` VolumeBinding wrote on its claim) and the messages of
its ``FailedScheduling`` events. Each setup runs the scheduler with its ``--feature-gates``;
the API server runs with ``VolumeLimitScaling=true`` (without it, it drops the CSIDriver's
``preventPodSchedulingIfMissing``) and the PV controller binds the static volumes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORDING = ROOT / "tests" / "fixtures" / "scheduler" / "storage-gates.json"

APISERVER_GATES = "VolumeLimitScaling=true"
GATES_ON = "StorageCapacityScoring=true,VolumeLimitScaling=true"
HOSTNAME = "kubernetes.io/hostname"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
NODES = ("n0", "n1", "n2")

PROFILES = [
    {"schedulerName": "default-scheduler"},
    {
        "schedulerName": "packing",
        "pluginConfig": [
            {
                "name": "VolumeBinding",
                "args": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                },
            }
        ],
    },
]
"""The default profile, and one whose shape prefers the fullest node (bin packing)."""


def profiles_for(gates: str) -> list[dict[str, Any]]:
    """The profiles a setup runs: a ``shape`` needs the StorageCapacityScoring gate, so the
    setups without it run the default profile alone."""
    return PROFILES if "StorageCapacityScoring=true" in gates else PROFILES[:1]


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name}},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        },
    }


def storage_class(name: str, provisioner: str = "kubernetes.io/no-provisioner") -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def local_pv(name: str, on: str, class_name: str, size: str = "1Gi") -> dict[str, Any]:
    """A local PersistentVolume reachable from node ``on`` only."""
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [on]}]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": class_name,
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }


def claim(name: str, class_name: str, size: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": class_name,
            "resources": {"requests": {"storage": size}},
        },
    }


def csi_driver(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"attachRequired": False, **spec},
    }


def csi_node(on: str, *drivers: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": on},
        "spec": {"drivers": [{"name": d, "nodeID": on} for d in drivers]},
    }


def segment(name: str, on: str, class_name: str, capacity: str) -> dict[str, Any]:
    """A CSIStorageCapacity of ``class_name`` reaching node ``on``."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name},
        "storageClassName": class_name,
        "nodeTopology": {"matchLabels": {HOSTNAME: on}},
        "capacity": capacity,
    }


def pod(
    *claims: str, scheduler: str = "default-scheduler", on: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "app",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            }
        ],
        "volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims],
    }
    if on is not None:
        spec["nodeSelector"] = {HOSTNAME: on}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"}, "spec": spec}


def _static(prefix: str, scheduler: str) -> list[dict[str, Any]]:
    """Local PVs of 100Gi on n0, 25Gi on n1 and 40Gi on n2 for a 20Gi claim: 20%, 80% and
    50% utilization."""
    cls = f"{prefix}-local"
    return [
        storage_class(cls),
        local_pv(f"{prefix}-n0", "n0", cls, "100Gi"),
        local_pv(f"{prefix}-n1", "n1", cls, "25Gi"),
        local_pv(f"{prefix}-n2", "n2", cls, "40Gi"),
        claim("data", cls, "20Gi"),
        pod("data", scheduler=scheduler),
    ]


def _tracked(driver: str, *classes: str) -> list[dict[str, Any]]:
    """A CSI driver with storage capacity tracking, and its classes."""
    return [
        csi_driver(driver, storageCapacity=True),
        *(storage_class(c, provisioner=driver) for c in classes),
    ]


def _prevented(driver: str, prevent: bool, *csi_nodes: dict[str, Any]) -> list[dict[str, Any]]:
    """A driver with ``preventPodSchedulingIfMissing``, its class, the nodes' CSINodes and a
    claim of the class."""
    return [
        csi_driver(driver, preventPodSchedulingIfMissing=prevent),
        storage_class(driver, provisioner=driver),
        *csi_nodes,
        claim("data", driver, "1Gi"),
    ]


SETUPS: dict[str, str] = {"gates-on": GATES_ON, "gates-off": ""}
"""Each setup's ``--feature-gates`` for the scheduler."""

CASES: list[dict[str, Any]] = [
    {
        "id": "static-most-free-space",
        "setup": "gates-on",
        "objects": _static("s1", "default-scheduler"),
    },
    {
        "id": "static-bin-packing-shape",
        "setup": "gates-on",
        "objects": _static("s2", "packing"),
    },
    {
        # 10Gi of 50Gi, 200Gi, 100Gi: 20%, 5%, 10%.
        "id": "dynamic-most-free-capacity",
        "setup": "gates-on",
        "objects": [
            *_tracked("d1.csi.example.com", "d1"),
            segment("d1-n0", "n0", "d1", "50Gi"),
            segment("d1-n1", "n1", "d1", "200Gi"),
            segment("d1-n2", "n2", "d1", "100Gi"),
            claim("data", "d1", "10Gi"),
            pod("data"),
        ],
    },
    {
        # x: 10Gi of 100Gi on n0, of 50Gi on n1; y: 30Gi of 40Gi on n0, of 300Gi on n1;
        # n0 (90 + 25) / 2 = 58, n1 (80 + 90) / 2 = 85; n2 has no segment.
        "id": "dynamic-two-classes-mean",
        "setup": "gates-on",
        "objects": [
            *_tracked("d2.csi.example.com", "d2-x", "d2-y"),
            segment("x-n0", "n0", "d2-x", "100Gi"),
            segment("x-n1", "n1", "d2-x", "50Gi"),
            segment("y-n0", "n0", "d2-y", "40Gi"),
            segment("y-n1", "n1", "d2-y", "300Gi"),
            claim("small", "d2-x", "10Gi"),
            claim("large", "d2-y", "30Gi"),
            pod("small", "large"),
        ],
    },
    {
        "id": "driver-installed-on-one-node",
        "setup": "gates-on",
        "objects": [
            *_prevented(
                "v1.csi.example.com",
                True,
                csi_node("n0", "v1.csi.example.com"),
                csi_node("n1", "other.csi.example.com"),
            ),
            pod("data"),
        ],
    },
    {
        "id": "driver-installed-nowhere",
        "setup": "gates-on",
        "objects": [
            *_prevented(
                "v2.csi.example.com",
                True,
                csi_node("n0", "other.csi.example.com"),
                csi_node("n1", "other.csi.example.com"),
            ),
            pod("data"),
        ],
    },
    {
        "id": "driver-does-not-ask",
        "setup": "gates-on",
        "objects": [*_prevented("v3.csi.example.com", False), pod("data", on="n2")],
    },
    {
        "id": "gate-off-driver-not-checked",
        "setup": "gates-off",
        "objects": [
            *_prevented("v4.csi.example.com", True, csi_node("n0", "other.csi.example.com")),
            pod("data", on="n0"),
        ],
    },
]


def chosen_node(pod_obj: dict[str, Any], claims: list[dict[str, Any]]) -> str | None:
    """The node chosen for the pod: its ``nodeName``, else the node VolumeBinding selected
    for its claims (a claim to provision waits for a provisioner before the pod is bound)."""
    if pod_obj["spec"].get("nodeName"):
        return pod_obj["spec"]["nodeName"]
    selected = {(c["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE) for c in claims}
    selected.discard(None)
    return selected.pop() if len(selected) == 1 else None
