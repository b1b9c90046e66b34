"""The device taint eviction controller: pods using devices with NoExecute taints, as upstream's.

kube-controller-manager's ``device-taint-eviction-controller`` (DRADeviceTaints, on by
default in v1.36) deletes the pods whose allocated ResourceClaims hold a device with a
``NoExecute`` taint their claim does not tolerate, as the taint eviction controller
does for nodes. For each allocated claim the eviction time is the earliest, over its
devices' NoExecute taints, of the taint's ``timeAdded`` plus the smallest
``tolerationSeconds`` of the allocation result's NoExecute tolerations that tolerate it
(a matching toleration without ``tolerationSeconds`` tolerates the taint for ever; no
matching toleration: at once). A bound pod for which one of its claims, reserved for
it, has an eviction time is deleted then: a ``DeviceTaintManagerEviction`` event
("Marking for deletion"), the ``DisruptionTarget`` condition (reason
``DeletionByDeviceTaintManager``), and a deletion with the pod's own grace period; the
cluster's eviction records (the report's ``evictions``) name the claim, the device and
the taint. When the taint goes (or the pod stops using the claim) before that, the
deletion is cancelled ("Cancelling deletion").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubesched.api import (
    Pod,
    PodClaimError,
    ResourceClaim,
    is_for_pod,
    is_reserved_for_pod,
    pod_claim_name,
    toleration_tolerates_taint,
)
from kubesched.backend.memory.evictions import (
    BY_DEVICE_TAINT_MANAGER,
    EvictionRecord,
    due_pod,
    pod_event,
    with_disruption_target,
)
from kubesched.backend.memory.naming import EPOCH
from kubesched.backend.protocol import EventType, WatchEvent

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = [
    "CONTROLLER_NAME",
    "REASON_DELETION_BY_DEVICE_TAINT_MANAGER",
    "DeviceTaintEvictionController",
]

CONTROLLER_NAME = "device-taint-eviction-controller"
REASON_DELETION_BY_DEVICE_TAINT_MANAGER = "DeletionByDeviceTaintManager"
MSG_DELETION = "Device Taint manager: deleting due to NoExecute taint"
EVENT_REASON = "DeviceTaintManagerEviction"

_Pool = tuple[str, str]


@dataclass
class _Work:
    """A scheduled deletion: the pod's uid, when it fires (virtual seconds), and the
    claim, device and taint that decided that time (for the eviction record)."""

    uid: str
    fire_at: float
    cause: _Cause


@dataclass(frozen=True)
class _Cause:
    """The claim's device whose taint gives the earliest eviction time, and how long the
    allocation tolerates it (None: not at all)."""

    claim: str
    device: str
    taint: str
    toleration_seconds: int | None

    def reason(self) -> str:
        """The eviction's one-line reason."""
        how = (
            "not tolerated"
            if self.toleration_seconds is None
            else f"tolerated for {self.toleration_seconds}s"
        )
        return (
            f"{REASON_DELETION_BY_DEVICE_TAINT_MANAGER}: NoExecute taint {self.taint} of "
            f"device {self.device} (claim {self.claim}) {how}"
        )


class DeviceTaintEvictionController:
    """Deletes pods whose claims' devices have NoExecute taints they do not tolerate."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self._taints: dict[_Pool, dict[str, list[Any]]] = {}
        """The NoExecute taints of each pool's newest generation, by device name."""
        self._first_seen: dict[tuple[Any, ...], float] = {}
        """When a taint without ``timeAdded`` was first seen (the API server would have
        stamped it then)."""
        self._work: dict[str, _Work] = {}
        self.enabled = True
        """False: the controller does nothing, as a cluster whose kube-controller-manager
        does not run it (``--controllers=-device-taint-eviction-controller``)."""

    # -- watch -----------------------------------------------------------------------------

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """Follow device taints, claims' allocations and reservations, and pods."""
        if not self.enabled:
            return
        if kind == "ResourceSlice":
            self._slice_changed(event)
        elif kind == "ResourceClaim":
            for claim in (event.old, None if event.type is EventType.DELETED else event.object):
                if claim is not None:
                    self._pods_of(claim)  # type: ignore[arg-type]
        elif kind == "Pod":
            pod: Pod = event.object  # type: ignore[assignment]
            if event.type is EventType.DELETED:
                self._work.pop(pod.key, None)
                return
            old: Pod | None = event.old  # type: ignore[assignment]
            if (
                old is not None
                and old.status.resource_claim_statuses == pod.status.resource_claim_statuses
                and old.spec.node_name == pod.spec.node_name
            ):
                return  # nothing about its claims changed (nor the eviction's own write)
            self._handle(pod)

    def _slice_changed(self, event: WatchEvent) -> None:
        sl = event.object
        pool = (sl.spec.driver, sl.spec.pool.name)  # type: ignore[attr-defined]
        slices = [
            s
            for s in self.cluster.objects("ResourceSlice")
            if (s.spec.driver, s.spec.pool.name) == pool  # type: ignore[attr-defined]
        ]
        newest = max((s.spec.pool.generation for s in slices), default=None)  # type: ignore[attr-defined]
        taints: dict[str, list[Any]] = {}
        for s in slices:
            if s.spec.pool.generation != newest:  # type: ignore[attr-defined]
                continue
            for device in s.spec.devices:  # type: ignore[attr-defined]
                no_execute = [t for t in device.taints if t.effect == "NoExecute"]
                if no_execute:
                    taints[device.name] = no_execute
        if taints == self._taints.get(pool, {}):
            return
        if taints:
            self._taints[pool] = taints
        else:
            self._taints.pop(pool, None)
        for claim in self.cluster.objects("ResourceClaim"):
            alloc = claim.status.allocation  # type: ignore[attr-defined]
            if alloc is not None and any((r.driver, r.pool) == pool for r in alloc.devices.results):
                self._pods_of(claim)  # type: ignore[arg-type]

    def _pods_of(self, claim: ResourceClaim) -> None:
        """``handlePods``: re-decide for every pod the claim is reserved for."""
        for ref in claim.status.reserved_for:
            if ref.api_group or ref.resource != "pods":
                continue
            pod: Pod | None = self.cluster.try_get("Pod", claim.namespace, ref.name)  # type: ignore[assignment]
            if pod is not None and pod.metadata.uid == ref.uid:
                self._handle(pod)

    # -- decisions -------------------------------------------------------------------------

    def _eviction_time(self, claim: ResourceClaim) -> tuple[float, _Cause] | None:
        """``evictionTime``: when pods using ``claim`` must go (virtual seconds), and the
        device taint that says so; None if they may stay."""
        alloc = claim.status.allocation
        if alloc is None or not self._taints:
            return None
        earliest: tuple[float, _Cause] | None = None
        for result in alloc.devices.results:
            pool = (result.driver, result.pool)
            for taint in self._taints.get(pool, {}).get(result.device, ()):
                added = self._time_added(pool, result.device, taint)
                seconds: int | None = None
                forever = False
                for tol in result.tolerations:
                    if tol.effect != "NoExecute" or not toleration_tolerates_taint(tol, taint):  # type: ignore[arg-type]
                        continue
                    if tol.toleration_seconds is None:
                        forever = True
                        break
                    wait = max(tol.toleration_seconds, 0)
                    seconds = wait if seconds is None else min(seconds, wait)
                if forever:
                    continue
                when = added + (seconds or 0)
                if earliest is None or when < earliest[0]:
                    value = f"={taint.value}" if taint.value else ""
                    cause = _Cause(
                        claim.name,
                        f"{result.driver}/{result.pool}/{result.device}",
                        f"{taint.key}{value}:{taint.effect}",
                        seconds,
                    )
                    earliest = (when, cause)
        return earliest

    def _time_added(self, pool: _Pool, device: str, taint: Any) -> float:
        if taint.time_added is not None:
            return (taint.time_added - EPOCH).total_seconds()
        key = (*pool, device, taint.key, taint.value, taint.effect)
        return self._first_seen.setdefault(key, self.cluster.now())

    def _handle(self, pod: Pod) -> None:
        """``handlePod``: schedule the pod's deletion at its claims' earliest eviction
        time, or cancel a scheduled one."""
        if not pod.spec.node_name:
            return
        when: float | None = None
        cause: _Cause | None = None
        for pc in pod.spec.resource_claims:
            try:
                name, check_owner = pod_claim_name(pod, pc)
            except PodClaimError:
                continue
            if name is None:
                continue
            claim: ResourceClaim | None = self.cluster.try_get("ResourceClaim", pod.namespace, name)  # type: ignore[assignment]
            if claim is None or claim.status.allocation is None:
                continue
            if check_owner:
                try:
                    is_for_pod(pod, claim)
                except PodClaimError:
                    continue
            if not is_reserved_for_pod(pod, claim):
                continue
            due = self._eviction_time(claim)
            if due is not None and (when is None or due[0] < when):
                when, cause = due
        key = pod.key
        if when is None:
            if self._work.pop(key, None) is not None:
                self._event(pod, "Cancelling deletion")
            return
        work = self._work.get(key)
        if work is not None and work.fire_at == when:
            return
        assert cause is not None  # set with when
        work = self._work[key] = _Work(pod.metadata.uid or "", when, cause)
        if when <= self.cluster.now():
            self._fire(key, work)
        else:
            self.cluster.call_at(when, lambda: self._fire(key, work))

    def _event(self, pod: Pod, message: str) -> None:
        pod_event(self.cluster, pod.namespace, pod.name, EVENT_REASON, message, CONTROLLER_NAME)

    # -- deletion --------------------------------------------------------------------------

    def _fire(self, key: str, work: _Work) -> None:
        cluster = self.cluster
        pod = due_pod(cluster, self._work, key, work)
        if pod is None:
            return
        self._event(pod, "Marking for deletion")
        if not any(
            (c.type, c.status, c.reason, c.message)
            == ("DisruptionTarget", "True", REASON_DELETION_BY_DEVICE_TAINT_MANAGER, MSG_DELETION)
            for c in pod.status.conditions
        ):
            new = with_disruption_target(
                pod, REASON_DELETION_BY_DEVICE_TAINT_MANAGER, MSG_DELETION, cluster.now()
            )
            pod = cluster.update(new)  # type: ignore[assignment]
        if pod.metadata.deletion_timestamp is None:
            grace = pod.spec.termination_grace_period_seconds
            cause = work.cause
            cluster.record_eviction(
                EvictionRecord.of(
                    pod,
                    time=cluster.now(),
                    node=pod.spec.node_name or "",
                    by=BY_DEVICE_TAINT_MANAGER,
                    reason=cause.reason(),
                    message=MSG_DELETION,
                    grace_period_seconds=float(grace if grace is not None else 30),
                    details={
                        "conditionReason": REASON_DELETION_BY_DEVICE_TAINT_MANAGER,
                        "claim": cause.claim,
                        "device": cause.device,
                        "taint": cause.taint,
                        "tolerationSeconds": cause.toleration_seconds,
                    },
                )
            )
            cluster.delete_pod(pod)
