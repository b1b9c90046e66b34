"""A CSI external-provisioner stand-in for a scratch control plane: the volumes of the ``stateful``
bench workload through a real API server.

A ``WaitForFirstConsumer`` claim is provisioned once a scheduler has chosen a node for its
pod (the claim's ``volume.kubernetes.io/selected-node`` annotation, written at PreBind by
kube-scheduler and ``kubesched run`` alike): as the external-provisioner does, it creates a
PersistentVolume of the claim's size and access modes, bound in advance to the claim
(``claimRef``), reachable from the chosen node's zone; kube-controller-manager's
``persistentvolume-binder-controller`` then binds the claim, and the scheduler's PreBind,
which waits for that, lets the pod bind. Nothing is attached or mounted.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from kubesched.backend.kube import KubeClient
from kubesched.backend.protocol import BackendError, ConflictError

SELECTED_NODE = "volume.kubernetes.io/selected-node"
ZONE_LABEL = "topology.kubernetes.io/zone"
PV_CONTROLLER = "persistentvolume-binder-controller"
"""The kube-controller-manager controller that binds a claim to its provisioned volume."""


class Provisioner:
    """Provisions, on a thread, the claims of the storage classes whose provisioner is one of
    ``drivers``; ``created`` lists the PersistentVolumes it made (for the clean-up)."""

    def __init__(self, client: KubeClient, drivers: set[str]) -> None:
        self.client = client
        self.drivers = drivers
        self.created: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._done: set[str] = set()
        self._zones: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-provisioner", daemon=True)

    def start(self) -> Provisioner:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        classes: dict[str, str] = {}
        rv = ""
        while not self._stop.is_set():
            try:
                if not rv:
                    for sc in self.client.request("GET", "/apis/storage.k8s.io/v1/storageclasses")[
                        "items"
                    ]:
                        classes[sc["metadata"]["name"]] = sc.get("provisioner", "")
                    listed = self.client.request("GET", "/api/v1/persistentvolumeclaims")
                    for pvc in listed["items"]:
                        self._sync(pvc, classes)
                    rv = listed["metadata"]["resourceVersion"]
                rv = self._watch(rv, classes)
            except BackendError as err:  # an expired watch (410) or a hiccup: list again
                self.errors.append(str(err))
                rv = ""
                self._stop.wait(0.5)

    def _watch(self, rv: str, classes: dict[str, str]) -> str:
        query = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": 2}
        resp, events = self.client.stream("/api/v1/persistentvolumeclaims", query, 10)
        try:
            for ev in events:
                if ev["type"] == "ERROR":
                    return ""
                rv = ev["object"]["metadata"].get("resourceVersion", rv)
                if ev["type"] in ("ADDED", "MODIFIED"):
                    self._sync(ev["object"], classes)
                if self._stop.is_set():
                    break
        finally:
            resp.close()
        return rv

    def _sync(self, pvc: dict[str, Any], classes: dict[str, str]) -> None:
        meta, spec = pvc["metadata"], pvc.get("spec") or {}
        node = (meta.get("annotations") or {}).get(SELECTED_NODE)
        driver = classes.get(spec.get("storageClassName") or "")
        if not node or spec.get("volumeName") or driver not in self.drivers:
            return
        if meta["uid"] in self._done:
            return
        pv = self._volume(pvc, driver, node)
        with contextlib.suppress(ConflictError):  # provisioned already
            self.client.request("POST", "/api/v1/persistentvolumes", body=pv)
            self.created.append(pv)
        self._done.add(meta["uid"])

    def _zone(self, node: str) -> str:
        if node not in self._zones:
            labels = self.client.request("GET", f"/api/v1/nodes/{node}")["metadata"]["labels"]
            self._zones[node] = labels.get(ZONE_LABEL, "")
        return self._zones[node]

    def _volume(self, pvc: dict[str, Any], driver: str, node: str) -> dict[str, Any]:
        """The PersistentVolume for ``pvc``, pre-bound to it, in ``node``'s zone."""
        meta, spec = pvc["metadata"], pvc["spec"]
        name = f"pvc-{meta['uid']}"
        zone = self._zone(node)
        # The zone, as a zonal CSI driver reports its topology; the node alone without one.
        key, value = (ZONE_LABEL, zone) if zone else ("kubernetes.io/hostname", node)
        selector = {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": driver}},
            "spec": {
                "capacity": {"storage": spec["resources"]["requests"]["storage"]},
                "accessModes": spec["accessModes"],
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": spec["storageClassName"],
                "volumeMode": spec.get("volumeMode", "Filesystem"),
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "csi": {"driver": driver, "volumeHandle": name},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [selector]}},
            },
        }
