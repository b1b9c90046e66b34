"""The embedded cluster's storage controllers: PV binding, provisioning, ephemeral claims."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesched.api import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    Node,
    OwnerReference,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
    parse_quantity,
)
from kubesched.api.validation import InvalidObjectError, validate_object
from kubesched.api.validation.storage import validate_csi_driver_name
from kubesched.api.volumeutil import (
    check_access_modes,
    claim_reference,
    ephemeral_claim_name,
    find_matching_volume,
    is_volume_bound_to_claim,
    storage_capacity_reaches,
    storage_capacity_sufficient,
)
from kubesched.backend.protocol import BackendError, EventType, RecordedEvent, WatchEvent
from kubesched.notices import notice

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = ["PROVISIONER_COMPONENT", "PROVISIONER_RUNNING_ANNOTATION", "VolumeControllers"]

PROVISIONER_COMPONENT = "kubesched-provisioner"
"""``reportingController`` of the provisioner's Events."""

PROVISIONER_RUNNING_ANNOTATION = "kubesched.io/provisioner-running"
"""On a StorageClass: ``"false"`` reproduces a cluster where no provisioner serves the
class: its claims wait, Pending, as the PV controller says (``ExternalProvisioning``)."""

WAITING_FOR_PROVISIONER = (
    "Waiting for a volume to be created either by the external provisioner '{}' or "
    "manually by the system administrator. If volume creation is delayed, please verify "
    "that the provisioner is running and correctly registered."
)
"""The PV controller's ``ExternalProvisioning`` event, while a claim waits for its class's
provisioner."""

_PV_CONTROLLER = "persistentvolume-controller"

_WATCHED = frozenset(
    {"PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSIStorageCapacity", "Pod"}
)


class VolumeControllers:
    """kube-controller-manager's PV controller, the ephemeral-volume controller and a
    CSI external-provisioner, simulated and run synchronously like the workload
    controllers.

    * Claims of an ``Immediate`` class (or without class) bind to the smallest matching
      Available PV, or get a provisioned one; claims of a ``WaitForFirstConsumer`` class
      wait until the scheduler names a node (``volume.kubernetes.io/selected-node``).
    * A PV whose ``claimRef`` names a claim (the scheduler's PreBind, or a user's
      pre-binding) is bound to it: the claim gets ``volumeName``, the
      ``bind-completed`` annotation and phase Bound.
    * Provisioning: the PV controller hands the claim to its class's provisioner (event
      ``ExternalProvisioning``); a CSI provisioner is assumed to run for every class
      whose provisioner is a valid CSI driver name, unless the class is annotated
      ``kubesched.io/provisioner-running: "false"``. Without one (and for a name that
      no CSI driver can have, such as ``k8s.io/minikube-hostpath``, with a notice) the
      claim stays Pending, as on a cluster lacking that provisioner. The provisioner
      creates ``pvc-<claim uid>`` in the selected node's topology (the
      keys the node's CSINode reports for the driver, else the class's
      allowedTopologies keys). When the driver's CSIDriver sets ``storageCapacity``,
      a CSIStorageCapacity reaching the node must have room, and the volume's size
      is taken off it; otherwise provisioning fails as the external-provisioner's
      rescheduling does: the selected-node annotation is removed and a
      ``ProvisioningFailed`` event recorded.
    * A deleted claim releases its volume per ``persistentVolumeReclaimPolicy``
      (Delete removes it, Retain leaves it Released, Recycle makes it Available);
      a claim whose volume is deleted becomes Lost.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self._waiting: set[str] = set()  # claims told they wait for their provisioner
        self._unserved: set[str] = set()  # classes noticed as having no provisioner

    # -- dispatch --------------------------------------------------------------------------

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """React to one change of the cluster."""
        if kind not in _WATCHED:
            return
        obj = event.object
        if kind == "Pod":
            if event.type == EventType.ADDED:
                self._create_ephemeral_claims(obj)  # type: ignore[arg-type]
            return
        if kind in ("StorageClass", "CSIStorageCapacity"):
            if event.type == EventType.ADDED:
                self._sync_pending_claims()
            return
        if event.type == EventType.DELETED:
            if kind == "PersistentVolumeClaim":
                self._release_volumes_of(obj)  # type: ignore[arg-type]
            else:
                self._lose_claims_of(obj)  # type: ignore[arg-type]
            return
        current = self.cluster.try_get(kind, obj.metadata.namespace, obj.name)
        if current is None or current.metadata.uid != obj.metadata.uid:
            return
        if kind == "PersistentVolumeClaim":
            self.sync_claim(current)  # type: ignore[arg-type]
        else:
            self.sync_volume(current)  # type: ignore[arg-type]

    def resync_all(self) -> None:
        """Reconcile every volume, then every claim (after a batch load)."""
        for pv in self.cluster.objects("PersistentVolume"):
            if self.cluster.try_get("PersistentVolume", None, pv.name) is pv:
                self.sync_volume(pv)  # type: ignore[arg-type]
        for pod in self.cluster.objects("Pod"):
            self._create_ephemeral_claims(pod)  # type: ignore[arg-type]
        for pvc in self.cluster.objects("PersistentVolumeClaim"):
            if self.cluster.try_get("PersistentVolumeClaim", pvc.namespace, pvc.name) is pvc:
                self.sync_claim(pvc)  # type: ignore[arg-type]

    def _sync_pending_claims(self) -> None:
        for pvc in self.cluster.objects("PersistentVolumeClaim"):
            current = self.cluster.try_get("PersistentVolumeClaim", pvc.namespace, pvc.name)
            if current is pvc and not pvc.spec.volume_name:  # type: ignore[attr-defined]
                self.sync_claim(pvc)  # type: ignore[arg-type]

    # -- helpers ---------------------------------------------------------------------------

    def _class(self, name: str) -> StorageClass | None:
        return self.cluster.try_get("StorageClass", None, name) if name else None  # type: ignore[return-value]

    def _default_class(self) -> StorageClass | None:
        # Several defaults: the newest wins, as the DefaultStorageClass admission plugin.
        defaults = [sc for sc in self.cluster.objects("StorageClass") if sc.is_default]  # type: ignore[attr-defined]
        if not defaults:
            return None
        return max(defaults, key=lambda sc: (sc.metadata.creation_timestamp or 0, sc.name))  # type: ignore[return-value]

    def _event(
        self,
        obj: PersistentVolumeClaim,
        etype: str,
        reason: str,
        message: str,
        component: str = PROVISIONER_COMPONENT,
    ) -> None:
        self.cluster.record_event(
            RecordedEvent(
                involved_kind="PersistentVolumeClaim",
                involved_namespace=obj.namespace,
                involved_name=obj.name,
                type=etype,
                reason=reason,
                message=message,
                reporting_controller=component,
                timestamp=self.cluster.now(),
            )
        )

    # -- claims ----------------------------------------------------------------------------

    def sync_claim(self, pvc: PersistentVolumeClaim) -> None:
        """Reconcile one claim (``syncClaim``)."""
        if pvc.metadata.deletion_timestamp is not None:
            return
        if (
            pvc.spec.storage_class_name is None
            and "volume.beta.kubernetes.io/storage-class" not in (pvc.metadata.annotations)
        ):
            default = self._default_class()
            if default is not None:
                # Retroactive default StorageClass assignment (GA in 1.28).
                new = pvc.model_copy(deep=True)
                new.spec.storage_class_name = default.name
                self.cluster.update(new)
                return
        if pvc.spec.volume_name:
            self._sync_bound_claim(pvc)
            return
        if pvc.status.phase is None:
            self._set_claim_phase(pvc, "Pending")
            return
        sc = self._class(pvc.class_name)
        delayed = sc is not None and sc.volume_binding_mode == "WaitForFirstConsumer"
        volumes = self.cluster.objects("PersistentVolume")
        try:
            pv = find_matching_volume(pvc, volumes, None, delay_binding=delayed)  # type: ignore[arg-type]
        except ValueError:
            return
        if pv is not None and check_access_modes(pvc, pv):
            self._bind_volume_to_claim(pv, pvc)
            return
        if sc is None or sc.provisioner in ("", NOT_SUPPORTED_PROVISIONER):
            return
        if delayed and not pvc.metadata.annotations.get(ANN_SELECTED_NODE):
            return
        if pvc.metadata.uid not in self._waiting:
            self._waiting.add(pvc.metadata.uid or "")
            self._event(
                pvc,
                "Normal",
                "ExternalProvisioning",
                WAITING_FOR_PROVISIONER.format(sc.provisioner),
                component=_PV_CONTROLLER,
            )
        if sc.metadata.annotations.get(PROVISIONER_RUNNING_ANNOTATION, "").lower() == "false":
            return
        if delayed:
            node_name = pvc.metadata.annotations.get(ANN_SELECTED_NODE)
            if node_name:
                self._provision(pvc, sc, node_name)
            return
        self._provision(pvc, sc, None)

    def _sync_bound_claim(self, pvc: PersistentVolumeClaim) -> None:
        pv: PersistentVolume | None = self.cluster.try_get(
            "PersistentVolume", None, pvc.spec.volume_name
        )  # type: ignore[assignment]
        if pv is None:
            if pvc.status.phase == "Bound":
                self._set_claim_phase(pvc, "Lost")
            elif pvc.status.phase is None:
                self._set_claim_phase(pvc, "Pending")
            return
        if pv.spec.claim_ref is None:
            # A claim pre-bound by the user: bind the volume to it.
            self._bind_volume_to_claim(pv, pvc)
        elif is_volume_bound_to_claim(pv, pvc):
            self._complete_claim(pvc, pv)
        elif pvc.status.phase is None:
            self._set_claim_phase(pvc, "Pending")

    def _set_claim_phase(self, pvc: PersistentVolumeClaim, phase: str) -> None:
        # Shallow copies suffice: the store copies what it is given.
        status = pvc.status.model_copy(update={"phase": phase})
        self.cluster.update(pvc.model_copy(update={"status": status}))

    def _complete_claim(self, pvc: PersistentVolumeClaim, pv: PersistentVolume) -> None:
        """Mark the claim bound to ``pv`` (``bindClaimToVolume`` + status)."""
        ann = pvc.metadata.annotations
        if (
            ann.get(ANN_BIND_COMPLETED) == "yes"
            and pvc.status.phase == "Bound"
            and pvc.spec.volume_name == pv.name
        ):
            if pv.status.phase != "Bound":
                self._set_volume_phase(pv, "Bound")
            return
        new = pvc.model_copy(deep=True)
        new.spec.volume_name = pv.name
        new.metadata.annotations[ANN_BIND_COMPLETED] = "yes"
        if pvc.spec.volume_name != pv.name:
            new.metadata.annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        new.status.phase = "Bound"
        new.status.access_modes = list(pv.spec.access_modes)
        new.status.capacity = dict(pv.spec.capacity)
        self.cluster.update(new)

    def _bind_volume_to_claim(self, pv: PersistentVolume, pvc: PersistentVolumeClaim) -> None:
        new = pv.model_copy(deep=True)
        new.spec.claim_ref = claim_reference(pvc)
        new.metadata.annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        new.status.phase = "Bound"
        self.cluster.update(new)

    # -- volumes ---------------------------------------------------------------------------

    def sync_volume(self, pv: PersistentVolume) -> None:
        """Reconcile one volume (``syncVolume``)."""
        if pv.metadata.deletion_timestamp is not None:
            return
        ref = pv.spec.claim_ref
        if ref is None:
            if pv.status.phase != "Available":
                self._set_volume_phase(pv, "Available")
            else:
                self._sync_pending_claims()
            return
        pvc: PersistentVolumeClaim | None = self.cluster.try_get(
            "PersistentVolumeClaim", ref.namespace or "default", ref.name
        )  # type: ignore[assignment]
        if pvc is not None and ref.uid and pvc.metadata.uid != ref.uid:
            pvc = None
        if pvc is None:
            if not ref.uid:
                # Pre-bound by a user to a claim that does not exist yet.
                if pv.status.phase != "Available":
                    self._set_volume_phase(pv, "Available")
                return
            self._reclaim(pv)
            return
        if not pvc.spec.volume_name or pvc.spec.volume_name == pv.name:
            if not ref.uid:
                new = pv.model_copy(deep=True)
                new.spec.claim_ref.uid = pvc.metadata.uid  # type: ignore[union-attr]
                new.status.phase = "Bound"
                self.cluster.update(new)
                return
            if pv.status.phase != "Bound":
                self._set_volume_phase(pv, "Bound")
                return
            self._complete_claim(pvc, pv)
            return
        # The claim is bound to another volume: a controller-made reference is undone.
        if pv.metadata.annotations.get(ANN_BOUND_BY_CONTROLLER) == "yes":
            new = pv.model_copy(deep=True)
            new.spec.claim_ref = None
            new.status.phase = "Available"
            self.cluster.update(new)

    def _set_volume_phase(self, pv: PersistentVolume, phase: str) -> None:
        status = pv.status.model_copy(update={"phase": phase})
        self.cluster.update(pv.model_copy(update={"status": status}))

    def _reclaim(self, pv: PersistentVolume) -> None:
        policy = pv.spec.persistent_volume_reclaim_policy
        if policy == "Delete":
            self.cluster.delete("PersistentVolume", None, pv.name)
        elif policy == "Recycle":
            new = pv.model_copy(deep=True)
            new.spec.claim_ref = None
            new.status.phase = "Available"
            self.cluster.update(new)
        elif pv.status.phase != "Released":
            self._set_volume_phase(pv, "Released")

    def _release_volumes_of(self, pvc: PersistentVolumeClaim) -> None:
        for pv in self.cluster.objects("PersistentVolume"):
            if is_volume_bound_to_claim(pv, pvc):  # type: ignore[arg-type]
                self._reclaim(pv)  # type: ignore[arg-type]

    def _lose_claims_of(self, pv: PersistentVolume) -> None:
        for pvc in self.cluster.objects("PersistentVolumeClaim"):
            if pvc.spec.volume_name == pv.name and pvc.status.phase == "Bound":  # type: ignore[attr-defined]
                self._set_claim_phase(pvc, "Lost")  # type: ignore[arg-type]

    # -- provisioning ----------------------------------------------------------------------

    def _topology(self, sc: StorageClass, node: Node | None) -> list[dict[str, object]]:
        """The PV's nodeSelectorTerms: the node's values of the driver's topology keys."""
        if node is None:
            # Immediate binding: the first allowed topology, as a provisioner may pick.
            if not sc.allowed_topologies:
                return []
            exprs = [
                {"key": r.key, "operator": "In", "values": list(r.values)}
                for r in sc.allowed_topologies[0].match_label_expressions
            ]
            return [{"matchExpressions": exprs}] if exprs else []
        csi_node: CSINode | None = self.cluster.try_get("CSINode", None, node.name)  # type: ignore[assignment]
        entry = csi_node.driver(sc.provisioner) if csi_node is not None else None
        if entry is not None:
            keys = list(entry.topology_keys)
        else:
            keys = [r.key for t in sc.allowed_topologies for r in t.match_label_expressions]
        labels = node.metadata.labels
        exprs = [
            {"key": k, "operator": "In", "values": [labels[k]]}
            for k in dict.fromkeys(keys)
            if k in labels
        ]
        return [{"matchExpressions": exprs}] if exprs else []

    def _take_capacity(
        self, pvc: PersistentVolumeClaim, sc: StorageClass, node: Node | None
    ) -> bool:
        """False when the driver tracks capacity and no segment reaching the node has room;
        else True, with the volume's size taken off the segment used."""
        driver: CSIDriver | None = self.cluster.try_get("CSIDriver", None, sc.provisioner)  # type: ignore[assignment]
        if driver is None or not driver.spec.storage_capacity:
            return True
        size = pvc.spec.storage_request()
        if size == 0 and "storage" not in pvc.spec.resources.requests:
            return True
        labels = node.metadata.labels if node is not None else None
        for cap in self.cluster.objects("CSIStorageCapacity"):
            assert isinstance(cap, CSIStorageCapacity)
            if cap.storage_class_name != sc.name or not storage_capacity_sufficient(cap, size):
                continue
            if labels is not None and not storage_capacity_reaches(cap, labels):
                continue
            self._consume(cap, size)
            return True
        return False

    def _consume(self, cap: CSIStorageCapacity, size: int) -> None:
        # The driver would republish the segment's capacity after creating the volume.
        new = cap.model_copy(deep=True)
        if new.capacity is not None:
            left = max(0, new.capacity.value() - size)
            new.capacity = parse_quantity(str(left))
            if new.maximum_volume_size is not None and new.maximum_volume_size.value() > left:
                new.maximum_volume_size = new.capacity
        self.cluster.update(new)

    def _provision(
        self, pvc: PersistentVolumeClaim, sc: StorageClass, node_name: str | None
    ) -> None:
        errs = validate_csi_driver_name(sc.provisioner, "spec.csi.driver")
        if errs:
            # No CSI driver can bear that name: the simulated provisioner does not stand
            # in for it, and the claim waits as for a provisioner that is not running.
            if sc.name not in self._unserved:
                self._unserved.add(sc.name)
                notice(
                    f"provisioner {sc.provisioner!r} is not a CSI driver name "
                    f"({errs[0].body()}): no simulated provisioner serves the class, its "
                    "claims stay Pending",
                    obj=f"StorageClass {sc.name}",
                )
            return
        node: Node | None = None
        if node_name is not None:
            node = self.cluster.try_get("Node", None, node_name)  # type: ignore[assignment]
            if node is None:
                self._provisioning_failed(pvc, sc, f'node "{node_name}" not found')
                return
        if not self._take_capacity(pvc, sc, node):
            where = f'node "{node_name}"' if node_name else "any topology"
            self._provisioning_failed(
                pvc,
                sc,
                f"no CSIStorageCapacity of the class with room for the claim reaches {where}",
            )
            return
        name = f"pvc-{pvc.metadata.uid}"
        terms = self._topology(sc, node)
        manifest: dict[str, object] = {
            "metadata": {"name": name, "annotations": {ANN_PROVISIONED_BY: sc.provisioner}},
            "spec": {
                "capacity": {"storage": str(pvc.spec.resources.requests.get("storage", "0"))},
                "accessModes": list(pvc.spec.access_modes),
                "storageClassName": sc.name,
                "persistentVolumeReclaimPolicy": sc.reclaim_policy,
                "volumeMode": pvc.spec.volume_mode,
                "mountOptions": list(sc.mount_options),
                "csi": {"driver": sc.provisioner, "volumeHandle": name},
                "claimRef": {
                    "kind": "PersistentVolumeClaim",
                    "apiVersion": "v1",
                    "namespace": pvc.namespace,
                    "name": pvc.name,
                    "uid": pvc.metadata.uid,
                },
            },
            # The PV controller would mark it Bound at once: save that write.
            "status": {"phase": "Bound"},
        }
        if terms:
            manifest["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}  # type: ignore[index]
        pv = PersistentVolume.model_validate(manifest)
        errs = validate_object(pv)
        if errs:
            self._provisioning_failed(pvc, sc, str(InvalidObjectError.of(pv, errs)))
            return
        if self.cluster.try_get("PersistentVolume", None, name) is None:
            try:
                self.cluster.create(pv)
            except BackendError as err:
                self._provisioning_failed(pvc, sc, str(err))
                return
        where = f' on node "{node_name}"' if node_name else ""
        self._event(
            pvc,
            "Normal",
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {name}{where}",
        )

    def _provisioning_failed(self, pvc: PersistentVolumeClaim, sc: StorageClass, why: str) -> None:
        self._event(
            pvc,
            "Warning",
            "ProvisioningFailed",
            f'failed to provision volume with StorageClass "{sc.name}": {why}',
        )
        if ANN_SELECTED_NODE in pvc.metadata.annotations:
            # The external-provisioner's "reschedule": the scheduler must pick again.
            new = pvc.model_copy(deep=True)
            del new.metadata.annotations[ANN_SELECTED_NODE]
            self.cluster.update(new)

    # -- ephemeral volumes -----------------------------------------------------------------

    def _create_ephemeral_claims(self, pod: Pod) -> None:
        """The ephemeral-volume controller: a claim ``<pod>-<volume>`` owned by the pod."""
        if pod.metadata.deletion_timestamp is not None:
            return
        for vol in pod.spec.volumes:
            template = vol.ephemeral.volume_claim_template if vol.ephemeral is not None else None
            if template is None:
                continue
            name = ephemeral_claim_name(pod, vol)
            if self.cluster.try_get("PersistentVolumeClaim", pod.namespace, name) is not None:
                continue
            owner = OwnerReference(
                api_version="v1",
                kind="Pod",
                name=pod.name,
                uid=pod.metadata.uid or "",
                controller=True,
                block_owner_deletion=True,
            )
            claim = PersistentVolumeClaim(
                metadata={  # type: ignore[arg-type]
                    "name": name,
                    "namespace": pod.namespace,
                    "labels": dict(template.metadata.labels),
                    "annotations": dict(template.metadata.annotations),
                    "ownerReferences": [owner.to_dict()],
                },
                spec=template.spec.model_copy(deep=True),
            )
            self.cluster.create(claim)
