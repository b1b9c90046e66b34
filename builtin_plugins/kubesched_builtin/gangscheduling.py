"""GangScheduling: all or nothing for the pods of a ``scheduling.k8s.io`` PodGroup with a
gang policy (PreEnqueue, PostFilter, Reserve, Permit), behind the GangScheduling gate.

A pod joins a PodGroup through ``spec.schedulingGroup.podGroupName``. PreEnqueue keeps it
out of the queue until its PodGroup exists and at least ``minCount`` pods name the group;
Permit holds each pod that found a node until ``minCount`` pods of the group are assumed
or bound, then lets them all go. kube-scheduler v1.36 schedules such a group in one pod
group cycle; here each pod is scheduled on its own and PostFilter turns a member that
found no node into the group's failure: the pods of the group waiting at Permit are
rejected with upstream's message for a gang that could not be placed.
"""

from __future__ import annotations

from typing import Any

from kubesched import (
    PODS_TO_ACTIVATE_KEY,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    QueueingHint,
    Status,
    hookimpl,
)
from kubesched.api import Pod, WorkloadPodGroup
from kubesched.api.podgroups import WORKLOAD_POD_GROUP
from kubesched_builtin.names import GANG_SCHEDULING

NAME = GANG_SCHEDULING

GATE = "GangScheduling"
"""The feature gate that puts the plugin in the default profile (alpha, off by default;
it needs GenericWorkload, the gate of the Workload API)."""

ERR_REASON_POD_GROUP_MISSING = (
    'waiting for pods\'s pod group "{name}" to appear in scheduling queue'
)
"""PreEnqueue: the pod's PodGroup does not exist (upstream's wording, ``pods's`` included)."""
ERR_REASON_QUORUM_NOT_QUEUED = "waiting for minCount pods from a gang to appear in scheduling queue"
"""PreEnqueue: fewer than ``minCount`` pods name the group."""
ERR_REASON_WAITING_ON_PERMIT = "waiting for minCount pods from a gang to be scheduled"
"""Permit: the pod waits for ``minCount`` pods of its group to be assumed or bound."""
ERR_REASON_GANG_UNSCHEDULABLE = (
    "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
    "one or more plugins asked to wait and no plugin rejected pod"
)
"""What the group's waiting pods are rejected with when a member found no node: the
message kube-scheduler v1.36 gives the placed pods of a gang it could not place."""

SCHEDULING_TIMEOUT = 300.0
"""Seconds a gang's pods wait at Permit for the quorum (upstream's
``DefaultSchedulingTimeoutDuration``, 5 minutes)."""

_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def pod_group_name(pod: Pod | None) -> str | None:
    """The PodGroup ``pod`` names in ``spec.schedulingGroup``, or None."""
    group = pod.spec.scheduling_group if pod is not None else None
    return group.pod_group_name if group is not None else None


def _same_group(pod: Pod, other: Pod | None) -> bool:
    name = pod_group_name(pod)
    return (
        name is not None
        and other is not None
        and pod_group_name(other) == name
        and (other.metadata.namespace or "default") == (pod.metadata.namespace or "default")
    )


class GangScheduling:
    """Schedules the pods of a gang PodGroup together: none is bound before ``minCount``
    of them have a node; pods of basic groups and pods without a group pass through."""

    name = NAME
    reads = (WORKLOAD_POD_GROUP,)
    """On a cluster, the Workload API's PodGroups are watched (not Coscheduling's CRD)."""

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    # -- lookups ------------------------------------------------------------------------
    def _pod_group(self, pod: Pod) -> WorkloadPodGroup | None:
        name = pod_group_name(pod)
        lister = self.handle.lister
        if name is None or lister is None:
            return None
        # Named with its apiVersion: Coscheduling's PodGroup (scheduling.x-k8s.io) has the
        # same kind name, and one of each may have the same namespace and name.
        found = lister.get_object(WORKLOAD_POD_GROUP, pod.metadata.namespace or "default", name)
        return found if isinstance(found, WorkloadPodGroup) else None

    def _group_pods(self, pod: Pod) -> list[Pod]:
        """The pods of the cluster that name the pod's group (itself included), but the
        finished ones: what upstream's workload manager counts as the group's pods."""
        lister = self.handle.lister
        name = pod_group_name(pod)
        if lister is None or name is None:
            return []
        # The lister narrows to the namespace; one attribute walk per pod of it.
        return [
            p
            for p in lister.list_objects("Pod", pod.metadata.namespace or "default")
            if (group := p.spec.scheduling_group) is not None
            and group.pod_group_name == name
            and p.status.phase not in _TERMINAL_PHASES
        ]

    def _assigned_count(self, pod: Pod) -> int:
        """Pods of the group with a node in the cycle's snapshot (bound or assumed); the
        pod being scheduled is not among them during its own cycle."""
        name = pod_group_name(pod)
        namespace = pod.metadata.namespace or "default"
        return sum(
            1
            for node_info in self.handle.snapshot.list()
            for pod_info in node_info.pods
            if (group := pod_info.pod.spec.scheduling_group) is not None
            and group.pod_group_name == name
            and pod_info.namespace == namespace
        )

    # -- events -------------------------------------------------------------------------
    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A new pod of the group may complete the quorum (the scheduling group cannot
        # change on update); a new PodGroup, or a smaller minCount, may let the pods in.
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.ADD), self._pod_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD), self._pod_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD_GROUP, ActionType.ADD), self._pod_group_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD_GROUP, ActionType.UPDATE),
                self._pod_group_updated,
            ),
        ]

    @staticmethod
    def _pod_added(pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        return QueueingHint.QUEUE if _same_group(pod, new_obj) else QueueingHint.SKIP

    @staticmethod
    def _names_group(pod: Pod, group: Any) -> bool:
        return (
            isinstance(group, WorkloadPodGroup)
            and pod_group_name(pod) == group.name
            and (pod.metadata.namespace or "default") == (group.metadata.namespace or "default")
        )

    def _pod_group_added(self, pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        return QueueingHint.QUEUE if self._names_group(pod, new_obj) else QueueingHint.SKIP

    def _pod_group_updated(self, pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        if not self._names_group(pod, new_obj) or not isinstance(old_obj, WorkloadPodGroup):
            return QueueingHint.SKIP
        old, new = old_obj.min_count, new_obj.min_count
        # Only a gang whose minCount went down may now be let in.
        if old is None or new is None or new >= old:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    # -- PreEnqueue ---------------------------------------------------------------------
    @hookimpl
    def pre_enqueue(self, pod: Pod) -> Status | None:
        name = pod_group_name(pod)
        if name is None:
            return None
        group = self._pod_group(pod)
        if group is None:
            return Status.unresolvable(ERR_REASON_POD_GROUP_MISSING.format(name=name))
        min_count = group.min_count
        if min_count is None:
            return None
        if len(self._group_pods(pod)) < min_count:
            return Status.unresolvable(ERR_REASON_QUORUM_NOT_QUEUED)
        return None

    # -- PostFilter ---------------------------------------------------------------------
    @hookimpl
    def post_filter(self, pod: Pod) -> Status:
        group = self._pod_group(pod)
        if group is None or group.min_count is None:
            return Status(Code.UNSCHEDULABLE)
        # A member without a node: the gang is not placed in this round, so the members
        # holding nodes at Permit give them back instead of waiting for the timeout.
        self._reject_waiting(pod, ERR_REASON_GANG_UNSCHEDULABLE)
        return Status(Code.UNSCHEDULABLE)

    # -- Reserve / Permit ---------------------------------------------------------------
    @hookimpl
    def reserve(self) -> None:
        # Nothing to claim: the snapshot's assumed pods are the group's assumed pods.
        return None

    @hookimpl
    def unreserve(self) -> None:
        return None

    @hookimpl
    def permit(self, state: CycleState, pod: Pod) -> Status | None:
        group = self._pod_group(pod)
        if group is None or group.min_count is None:
            return None
        if self._assigned_count(pod) + 1 < group.min_count:
            # Bring the group's other queued pods forward, so the gang forms quickly; not
            # those waiting here already: they hold a node, and activating a pod in flight
            # makes it retry at once when the gang fails.
            activate = state.get(PODS_TO_ACTIVATE_KEY)
            if activate is not None:
                waiting = {w.pod.metadata.uid for w in self.handle.iterate_over_waiting_pods()}
                activate.pods.update(
                    {
                        f"{p.metadata.namespace or 'default'}/{p.metadata.name}": p
                        for p in self._group_pods(pod)
                        if not p.spec.node_name
                        and p.metadata.uid != pod.metadata.uid
                        and p.metadata.uid not in waiting
                    }
                )
            return Status.wait(SCHEDULING_TIMEOUT, ERR_REASON_WAITING_ON_PERMIT)
        for waiting in self.handle.iterate_over_waiting_pods():
            if _same_group(pod, waiting.pod):
                waiting.allow(NAME)
        return None

    def _reject_waiting(self, pod: Pod, message: str) -> None:
        for waiting in self.handle.iterate_over_waiting_pods():
            if _same_group(pod, waiting.pod):
                waiting.reject(NAME, message)
