"""SchedulingGates: keep pods with ``spec.schedulingGates`` out of the active queue (PreEnqueue)."""

from __future__ import annotations

from typing import Any

from kubesched import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    EventResource,
    PodInfo,
    QueueingHint,
    Status,
    hookimpl,
)
from kubesched.api import Pod
from kubesched_builtin.names import SCHEDULING_GATES

NAME = SCHEDULING_GATES

ERR_REASON_WAITING_FOR_GATES = "waiting for scheduling gates: [{gates}]"
"""The gating reason; ``{gates}`` is the gate names joined by spaces (Go's ``%v`` of a
string slice: ``waiting for scheduling gates: [example.com/foo example.com/bar]``)."""


def gated_reason(pod: Pod) -> str | None:
    """The PreEnqueue reason for ``pod``, or ``None`` when it has no scheduling gates."""
    gates = pod.spec.scheduling_gates
    if not gates:
        return None
    return ERR_REASON_WAITING_FOR_GATES.format(gates=" ".join(g.name for g in gates))


def _pod_key(pod: Pod) -> str:
    meta = pod.metadata
    return meta.uid or f"{meta.namespace or 'default'}/{meta.name or ''}"


def is_schedulable_after_gates_eliminated(pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
    """Queueing hint: the update that removed the gates is about the gated pod itself.

    Upstream registers this event on ``TargetPod`` (events about the pod being
    scheduled only) and always answers Queue; our event resources have no
    ``TargetPod``, so the hint skips updates of other pods instead.
    """
    if new_obj is None or _pod_key(new_obj) != _pod_key(pod):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


class SchedulingGates:
    """Gates a pod while ``spec.schedulingGates`` is non-empty.

    The pod is neither scheduled nor counted as a failed attempt; it waits among the
    gated pods until an update removes its last gate.
    """

    name = NAME

    def __init__(self, args: Any, handle: Any) -> None:
        self._handle = handle

    @hookimpl
    def pre_enqueue(self, pod: Pod, pod_info: PodInfo) -> Status | None:
        reason = gated_reason(pod)
        if reason is None:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.UNSCHEDULED_POD,
                    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
                ),
                is_schedulable_after_gates_eliminated,
            )
        ]
