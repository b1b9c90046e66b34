"""Eviction records: which pod was evicted, when, by whom and why (for reports and --explain)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kubesched.api import Pod, PodCondition
from kubesched.backend.memory.naming import timestamp
from kubesched.backend.protocol import RecordedEvent

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = [
    "BY_DESCHEDULER",
    "BY_DEVICE_TAINT_MANAGER",
    "BY_DRAIN",
    "BY_KUBELET",
    "BY_POD_GC",
    "BY_PREEMPTION",
    "BY_TAINT_MANAGER",
    "EvictedBy",
    "EvictionRecord",
    "due_pod",
    "pod_event",
    "with_disruption_target",
]

EvictedBy = Literal[
    "taint-manager",
    "device-taint-manager",
    "kubelet",
    "drain",
    "pod-gc",
    "preemption",
    "descheduler",
]

BY_TAINT_MANAGER: EvictedBy = "taint-manager"
"""The taint eviction controller: a NoExecute taint the pod does not tolerate (long enough)."""
BY_DEVICE_TAINT_MANAGER: EvictedBy = "device-taint-manager"
"""The device taint eviction controller: a NoExecute taint of a device the pod's claim
holds (DRA), not tolerated (long enough)."""
BY_KUBELET: EvictedBy = "kubelet"
"""The kubelet's eviction manager: node-pressure eviction."""
BY_DRAIN: EvictedBy = "drain"
"""A drain through the Eviction API (honours PodDisruptionBudgets)."""
BY_DESCHEDULER: EvictedBy = "descheduler"
"""A descheduler strategy through the Eviction API (``kubesched deschedule``)."""
BY_POD_GC: EvictedBy = "pod-gc"
"""The pod garbage collector: the pod's node was deleted."""
BY_PREEMPTION: EvictedBy = "preemption"
"""The scheduler's preemption (a higher-priority pod needed the room)."""


@dataclass
class EvictionRecord:
    """One eviction: the pod (``namespace/name`` and uid), its node, the evictor, the
    virtual time, a one-line ``reason`` and the evictor's own ``message`` (the kubelet's
    status message, the taint manager's condition message), the termination grace
    period it was given, and ``details`` (the taint and tolerations, the signal,
    threshold and ranking, the PDB) as plain data."""

    time: float
    pod: str
    uid: str
    node: str
    by: EvictedBy
    reason: str
    message: str = ""
    grace_period_seconds: float | None = None
    owner_uid: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        pod: Pod,
        *,
        time: float,
        node: str,
        by: EvictedBy,
        reason: str,
        message: str = "",
        grace_period_seconds: float | None = None,
        details: dict[str, Any] | None = None,
    ) -> EvictionRecord:
        """The record of evicting ``pod`` (its key, uid and controller taken from it)."""
        ref = pod.metadata.controller_ref
        return cls(
            time=time,
            pod=pod.key,
            uid=pod.metadata.uid or "",
            node=node,
            by=by,
            reason=reason,
            message=message,
            grace_period_seconds=grace_period_seconds,
            owner_uid=ref.uid if ref is not None else None,
            details=details or {},
        )


def with_disruption_target(pod: Pod, reason: str, message: str, now: float) -> Pod:
    """A copy of ``pod`` with the condition ``DisruptionTarget=True`` (``reason``,
    ``message``) replacing any earlier one: how every evictor marks its pod."""
    new = pod.model_copy(deep=True)
    new.status.conditions = [c for c in new.status.conditions if c.type != "DisruptionTarget"]
    new.status.conditions.append(
        PodCondition(
            type="DisruptionTarget",
            status="True",
            reason=reason,
            message=message,
            last_transition_time=timestamp(now),
        )
    )
    return new


def pod_event(
    cluster: MemoryCluster, namespace: str, name: str, reason: str, message: str, controller: str
) -> None:
    """Record a Normal event of an evicting ``controller`` on the pod ``namespace/name``."""
    cluster.record_event(
        RecordedEvent(
            involved_kind="Pod",
            involved_namespace=namespace,
            involved_name=name,
            type="Normal",
            reason=reason,
            message=message,
            reporting_controller=controller,
        )
    )


def due_pod(cluster: MemoryCluster, pending: dict[str, Any], key: str, work: Any) -> Pod | None:
    """A timed eviction of the pod ``key`` (namespace/name) fires: the pod, when ``work``
    is still the one ``pending`` holds for it (it is taken off) and the pod is still the
    one it was scheduled for (``work.uid``: not deleted and created again); else None."""
    if pending.get(key) is not work:
        return None  # cancelled or replaced
    del pending[key]
    ns, _, name = key.partition("/")
    pod: Pod | None = cluster.try_get("Pod", ns, name)  # type: ignore[assignment]
    return pod if pod is not None and pod.metadata.uid == work.uid else None
