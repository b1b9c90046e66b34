"""VolumeRestrictions: in-tree disk conflicts and ReadWriteOncePod claims in use (PreFilter,
Filter, PreFilter add/remove for preemption), as upstream ``plugins/volumerestrictions``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    NodeBatch,
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
from kubesched_builtin import signers
from kubesched_builtin.names import VOLUME_RESTRICTIONS

NAME = VOLUME_RESTRICTIONS

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
"""Filter reason: a pod on the node mounts the same GCE PD / EBS / RBD / iSCSI disk in a
conflicting way."""
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
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


def _disk_conflict(pod: Pod, node_info: NodeInfo) -> bool:
    """Whether one of the pod's in-tree volumes conflicts with a pod on the node."""
    for v in pod.spec.volumes:
        if not _needs_restrictions_check(v):
            continue
        for existing in node_info.pods:
            if is_volume_conflict(v, existing.pod):
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


class _CopyCounts:
    """The conflicting-claim count on copies of some nodes with some of their pods
    removed or added back (preemption's batched dry run, nominated pods): the count is
    cluster-wide, so each copy's is the shared count plus what its own pods change,
    summed with numpy."""

    def __init__(
        self,
        s: _PreFilterState,
        table: Any,
        rows: Sequence[int],
        pods: Sequence[Sequence[PodInfo]],
    ) -> None:
        self.s = s
        self.size = len(table)
        self.rows = np.asarray(rows, dtype=np.intp)
        k, m = len(self.rows), max((len(ps) for ps in pods), default=0)
        self.contribution = np.zeros((k, m), dtype=np.int64)
        for j, ps in enumerate(pods):
            for i, p in enumerate(ps):
                self.contribution[j, i] = self.of(p)

    def of(self, pod_info: PodInfo) -> int:
        """What counting ``pod_info`` adds (``update_with_pod``)."""
        claims = self.s.read_write_once_pod_claims
        return sum(1 for key in _claim_keys(pod_info.pod) if key in claims) if claims else 0

    def view(self, positions: np.ndarray, weights: np.ndarray) -> _CopyView:
        """The copies at ``positions`` whose pod ``i`` counts ``weights[x, i]`` times."""
        delta = (self.contribution[positions] * weights).sum(axis=1)
        return _CopyView(self, self.rows[positions], delta)


class _CopyView:
    """Per copy of a node, the conflicting-claim count."""

    __slots__ = ("copies", "count", "slot")

    def __init__(self, copies: _CopyCounts, rows: np.ndarray, delta: np.ndarray) -> None:
        self.copies = copies
        self.count = copies.s.conflicting_claim_ref_count + delta
        self.slot = np.full(copies.size, -1, dtype=np.intp)
        self.slot[rows] = np.arange(len(rows))

    def with_added(self, rows: np.ndarray, pods: Sequence[Sequence[PodInfo]]) -> _CopyView:
        """The copies at table ``rows`` with ``pods[x]`` added to the copy of ``rows[x]``."""
        base = self.copies.s.conflicting_claim_ref_count
        delta = self.count[self.slot[rows]] - base
        delta += np.array([sum(map(self.copies.of, ps)) for ps in pods], dtype=np.int64)
        return _CopyView(self.copies, np.asarray(rows, dtype=np.intp), delta)

    def counts(self, rows: np.ndarray) -> np.ndarray:
        """The count on the copies of ``rows``."""
        return self.count[self.slot[rows]]


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
    def sign_pod(self, pod: Pod, pod_info: PodInfo) -> list[tuple[str, Any]]:
        """Only the pod's volumes decide."""
        return [signers.volumes(pod)]

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
        if _disk_conflict(pod, node_info):
            return Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
        s = state.get(PRE_FILTER_KEY)
        if s is not None and s.conflicting_claim_ref_count > 0:
            return Status(Code.UNSCHEDULABLE, ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
        return None

    @hookimpl
    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeBatch) -> np.ndarray:
        """``filter`` for a batch; on a what-if batch of node copies, with each copy's
        own conflicting-claim count. The NodeInfos are read only for a pod with
        in-tree volumes."""
        out = np.full(len(nodes), None, dtype=object)
        if any(_needs_restrictions_check(v) for v in pod.spec.volumes):
            for i, ni in enumerate(nodes.infos):
                if _disk_conflict(pod, ni):
                    out[i] = Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
        s = state.get(PRE_FILTER_KEY)
        if s is not None:
            view = nodes.copies.get(NAME) if nodes.copies else None
            count = view.counts(nodes.rows) if view is not None else s.conflicting_claim_ref_count
            conflict = (np.asarray(count) > 0) & np.equal(out, None)
            if conflict.any():
                out[conflict] = Status(Code.UNSCHEDULABLE, ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
        return out

    def pre_filter_copies(
        self,
        state: CycleState,
        pod_info: PodInfo,
        table: Any,
        rows: Sequence[int],
        pods: Sequence[Sequence[PodInfo]],
    ) -> _CopyCounts:
        """The conflicting-claim count of copies of the nodes at ``rows`` as numpy
        columns (see :class:`~kubesched.framework.preemption_batch.NodeCopies`)."""
        return _CopyCounts(state.read(PRE_FILTER_KEY), table, rows, pods)

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
