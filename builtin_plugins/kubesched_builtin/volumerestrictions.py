"""VolumeRestrictions: in-tree disk conflicts and ReadWriteOncePod claims in use (PreFilter,
Filter, PreFilter add/remove for preemption), as upstream ``plugins/volumerestrictions``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
    StateData,
    StateKey,
    Status,
    hookimpl,
)
from kubesched.api import PersistentVolumeClaim, Pod, Volume
from kubesched.api.volumeutil import pod_uses_claim
from kubesched_builtin.names import VOLUME_RESTRICTIONS

NAME = VOLUME_RESTRICTIONS

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
"""Filter reason: a pod on the node mounts the same GCE PD / EBS / RBD / iSCSI disk in a
conflicting way."""
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
"""Filter reason: a ReadWriteOncePod claim of the pod is used by another pod (any node)."""


def _needs_restrictions_check(v: Volume) -> bool:
    return (
        v.gce_persistent_disk is not None
        or v.aws_elastic_block_store is not None
        or v.rbd is not None
        or v.iscsi is not None
    )


def _shared_writably(mine: Any, theirs: Any, same: Callable[[Any, Any], bool]) -> bool:
    """Both mounts exist, are of the same disk, and not both read-only."""
    return (
        mine is not None
        and theirs is not None
        and same(mine, theirs)
        and not (mine.read_only and theirs.read_only)
    )


def _same_rbd_image(a: Any, b: Any) -> bool:
    # The same image: a shared monitor, the same pool and image name.
    return bool(set(a.monitors) & set(b.monitors)) and a.pool == b.pool and a.image == b.image


def is_volume_conflict(volume: Volume, other: Pod) -> bool:
    """Whether ``volume`` conflicts with a volume of ``other`` (``isVolumeConflict``):
    the same GCE PD unless both read-only, the same EBS volume, the same iSCSI IQN unless
    both read-only, the same RBD image (a shared monitor, same pool and image) unless
    both read-only."""
    if not _needs_restrictions_check(volume):
        return False
    for ev in other.spec.volumes:
        ebs, eebs = volume.aws_elastic_block_store, ev.aws_elastic_block_store
        if ebs is not None and eebs is not None and ebs.volume_id == eebs.volume_id:
            return True
        if (
            _shared_writably(
                volume.gce_persistent_disk,
                ev.gce_persistent_disk,
                lambda a, b: a.pd_name == b.pd_name,
            )
            or _shared_writably(volume.iscsi, ev.iscsi, lambda a, b: a.iqn == b.iqn)
            or _shared_writably(volume.rbd, ev.rbd, _same_rbd_image)
        ):
            return True
    return False


def _claim_keys(pod: Pod) -> list[str]:
    return [
        f"{pod.namespace}/{v.persistent_volume_claim.claim_name}"
        for v in pod.spec.volumes
        if v.persistent_volume_claim is not None
    ]


@dataclass
class _PreFilterState(StateData):
    """The pod's ReadWriteOncePod claims and how many of them other pods use."""

    read_write_once_pod_claims: frozenset[str]
    conflicting_claim_ref_count: int

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.read_write_once_pod_claims, self.conflicting_claim_ref_count)

    def update_with_pod(self, pod: Pod, multiplier: int) -> None:
        self.conflicting_claim_ref_count += multiplier * sum(
            1 for key in _claim_keys(pod) if key in self.read_write_once_pod_claims
        )


PRE_FILTER_KEY: StateKey[_PreFilterState] = StateKey("PreFilter" + NAME)


class VolumeRestrictions:
    """Rejects a node where a pod already mounts one of this pod's in-tree disks in a
    conflicting way, and every node while a ReadWriteOncePod claim of the pod is in use
    by another pod (``Unschedulable``: preempting that pod helps, and preemption's
    what-if removes it through ``pre_filter_remove_pod``)."""

    name = NAME
    reads = ("PersistentVolumeClaim",)
    skips_pods_without = {"PreFilter": ("volumes",)}
    """PreFilter answers Skip for a pod without volumes (no disk, no claim in use): the
    framework skips the call."""

    def __init__(self, args: Any, handle: Any) -> None:
        self._handle = handle

    def _read_write_once_pod_claims(self, pod: Pod) -> set[str] | Status:
        lister = getattr(self._handle, "lister", None)
        out: set[str] = set()
        for v in pod.spec.volumes:
            if v.persistent_volume_claim is None:
                continue
            name = v.persistent_volume_claim.claim_name
            pvc: PersistentVolumeClaim | None = (
                lister.get_object("PersistentVolumeClaim", pod.namespace, name)
                if lister is not None
                else None
            )
            if pvc is None:
                return Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    f'persistentvolumeclaim "{name}" not found',
                )
            if "ReadWriteOncePod" in pvc.spec.access_modes:
                out.add(f"{pod.namespace}/{name}")
        return out

    @hookimpl
    def pre_filter(self, state: CycleState, pod: Pod) -> Status | None:
        needs_check = any(_needs_restrictions_check(v) for v in pod.spec.volumes)
        claims = self._read_write_once_pod_claims(pod)
        if isinstance(claims, Status):
            return claims
        snapshot = getattr(self._handle, "snapshot", None)
        used = 0
        if snapshot is not None:
            used = sum(1 for key in claims if snapshot.is_pvc_used_by_pods(key))
        if not needs_check and used == 0:
            return Status.skip()
        state.write(PRE_FILTER_KEY, _PreFilterState(frozenset(claims), used))
        return None

    @hookimpl
    def pre_filter_add_pod(self, state: CycleState, pod_info_to_add: PodInfo) -> Status | None:
        s = state.get(PRE_FILTER_KEY)
        if s is not None:
            s.update_with_pod(pod_info_to_add.pod, 1)
        return None

    @hookimpl
    def pre_filter_remove_pod(
        self, state: CycleState, pod_info_to_remove: PodInfo
    ) -> Status | None:
        s = state.get(PRE_FILTER_KEY)
        if s is not None:
            s.update_with_pod(pod_info_to_remove.pod, -1)
        return None

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        for v in pod.spec.volumes:
            if not _needs_restrictions_check(v):
                continue
            for existing in node_info.pods:
                if is_volume_conflict(v, existing.pod):
                    return Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
        s = state.get(PRE_FILTER_KEY)
        if s is not None and s.conflicting_claim_ref_count > 0:
            return Status(Code.UNSCHEDULABLE, ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
        return None

    # -- events --------------------------------------------------------------------------

    def is_schedulable_after_pod_deleted(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        """Queue when the deleted pod held a disk or a ReadWriteOncePod claim this pod
        wants (sharing a claim is enough: its access mode is checked again anyway)."""
        deleted = old if old is not None else new
        if deleted is None:
            return QueueingHint.QUEUE
        if any(is_volume_conflict(v, deleted) for v in pod.spec.volumes):
            return QueueingHint.QUEUE
        if set(_claim_keys(pod)) & set(_claim_keys(deleted)):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_pvc_added(
        self, pod: Pod, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim
    ) -> QueueingHint:
        """Queue when a claim the pod was waiting for was created."""
        uses = pod_uses_claim(pod, new, ephemeral=False)
        return QueueingHint.QUEUE if uses else QueueingHint.SKIP

    @hookimpl
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self.is_schedulable_after_pvc_added,
            ),
        ]
