"""VolumeZone: the zone/region labels of the pod's bound PVs must match the node's (PreFilter,
Filter), as upstream ``plugins/volumezone``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubesched import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    NodeInfo,
    PodInfo,
    QueueingHint,
    StateKey,
    Status,
    hookimpl,
)
from kubesched.api import PersistentVolume, PersistentVolumeClaim, Pod, StorageClass
from kubesched.api.volumeutil import LABEL_TOPOLOGY_KEYS, pod_uses_claim
from kubesched_builtin import signers
from kubesched_builtin.names import VOLUME_ZONE

NAME = VOLUME_ZONE

ERR_REASON_CONFLICT = "node(s) had no available volume zone"
"""Filter reason (UnschedulableAndUnresolvable): a bound PV's zone or region is not the
node's."""

_BETA_TO_GA = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}


@dataclass(frozen=True)
class PVTopology:
    """One topology label of a bound PV: ``key`` and the values it allows (a multi-zone
    PV lists its zones joined by ``__``)."""

    pv_name: str
    key: str
    values: frozenset[str]


PRE_FILTER_KEY: StateKey[tuple[PVTopology, ...]] = StateKey("PreFilter" + NAME)


class _Unschedulable(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


def pv_topologies(pv: PersistentVolume) -> list[PVTopology]:
    """The PV's zone/region labels (``getPVTopologies``), legacy beta keys included."""
    out = []
    for key in LABEL_TOPOLOGY_KEYS:
        value = pv.metadata.labels.get(key)
        if value is None:
            continue
        # volumehelpers.LabelZonesToSet: "__"-separated zones; an empty one is invalid.
        zones = value.split("__")
        if any(not z.strip() for z in zones):
            continue
        out.append(PVTopology(pv.name, key, frozenset(z.strip() for z in zones)))
    return out


class VolumeZone:
    """Keeps a pod whose bound volumes live in some zone or region off nodes elsewhere.

    Only claims that name their volume count; an unbound claim of a
    WaitForFirstConsumer class is VolumeBinding's business. A node without any zone or
    region label is always fine. A PV's beta label is matched against the node's GA
    label when the node lacks the beta one.
    """

    name = NAME
    reads = ("PersistentVolume", "PersistentVolumeClaim", "StorageClass")
    skips_pods_without = {"PreFilter": ("volumes",)}
    """PreFilter answers Skip for a pod without volumes: the framework skips the call."""

    def __init__(self, args: Any, handle: Any) -> None:
        self._handle = handle

    def _get(self, kind: str, namespace: str | None, name: str) -> Any:
        lister = getattr(self._handle, "lister", None)
        return lister.get_object(kind, namespace, name) if lister is not None else None

    def _not_found(self, resource: str, name: str) -> _Unschedulable:
        return _Unschedulable(
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f'{resource} "{name}" not found')
        )

    def _pod_topologies(self, pod: Pod) -> tuple[PVTopology, ...]:
        """``getPVbyPod``; raises ``_Unschedulable`` as upstream's statuses."""
        out: list[PVTopology] = []
        for vol in pod.spec.volumes:
            source = vol.persistent_volume_claim
            if source is None:
                continue
            if not source.claim_name:
                raise _Unschedulable(
                    Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "PersistentVolumeClaim had no name")
                )
            pvc: PersistentVolumeClaim | None = self._get(
                "PersistentVolumeClaim", pod.namespace, source.claim_name
            )
            if pvc is None:
                raise self._not_found("persistentvolumeclaim", source.claim_name)
            pv_name = pvc.spec.volume_name
            if not pv_name:
                class_name = pvc.class_name
                if not class_name:
                    raise _Unschedulable(
                        Status(
                            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                            "PersistentVolumeClaim had no pv name and storageClass name",
                        )
                    )
                sc: StorageClass | None = self._get("StorageClass", None, class_name)
                if sc is None:
                    raise self._not_found("storageclass.storage.k8s.io", class_name)
                if sc.volume_binding_mode == "WaitForFirstConsumer":
                    continue
                raise _Unschedulable(
                    Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "PersistentVolume had no name")
                )
            pv: PersistentVolume | None = self._get("PersistentVolume", None, pv_name)
            if pv is None:
                raise self._not_found("persistentvolume", pv_name)
            out.extend(pv_topologies(pv))
        return tuple(out)

    @hookimpl
    def sign_pod(self, pod: Pod, pod_info: PodInfo) -> list[tuple[str, Any]]:
        """Only the pod's volumes decide."""
        return [signers.volumes(pod)]

    @hookimpl
    def pre_filter(self, state: CycleState, pod: Pod) -> Status | None:
        try:
            topologies = self._pod_topologies(pod)
        except _Unschedulable as err:
            return err.status
        if not topologies:
            return Status.skip()
        state.write(PRE_FILTER_KEY, topologies)
        return None

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.spec.volumes:
            return None
        topologies = state.get(PRE_FILTER_KEY)
        if topologies is None:
            # PreFilter disabled in the profile: compute here, as upstream falls back to.
            try:
                topologies = self._pod_topologies(pod)
            except _Unschedulable as err:
                return err.status
        node = node_info.node
        labels = node.metadata.labels if node is not None else {}
        if not any(key in labels for key in LABEL_TOPOLOGY_KEYS):
            return None
        for t in topologies:
            value = labels.get(t.key)
            if value is None:
                value = labels.get(_BETA_TO_GA.get(t.key, t.key))
            if value is None or value not in t.values:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)
        return None

    # -- events --------------------------------------------------------------------------

    def is_schedulable_after_pvc_change(
        self, pod: Pod, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim
    ) -> QueueingHint:
        """Queue when one of the pod's claims was added or changed."""
        # VolumeZone reads persistentVolumeClaim volumes only.
        uses = pod_uses_claim(pod, new, ephemeral=False)
        return QueueingHint.QUEUE if uses else QueueingHint.SKIP

    def is_schedulable_after_storage_class_added(
        self, pod: Pod, old: StorageClass | None, new: StorageClass
    ) -> QueueingHint:
        """Queue when a WaitForFirstConsumer class appeared (its claims stop blocking)."""
        if new.volume_binding_mode == "WaitForFirstConsumer":
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_pv_change(
        self, pod: Pod, old: PersistentVolume | None, new: PersistentVolume
    ) -> QueueingHint:
        """Queue on a new PV, or when a PV's zone/region labels changed."""
        if old is None:
            return QueueingHint.QUEUE
        if pv_topologies(old) != pv_topologies(new):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @hookimpl
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD),
                self.is_schedulable_after_storage_class_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, add_update),
                self.is_schedulable_after_pvc_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME, add_update),
                self.is_schedulable_after_pv_change,
            ),
        ]
