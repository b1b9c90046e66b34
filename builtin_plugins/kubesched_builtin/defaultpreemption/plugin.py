"""DefaultPreemption: preempt lower-priority pods for a pod that fits no node (PostFilter)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kubesched import (
    DISRUPTION_TARGET,
    ERR_REASON_NO_VICTIMS,
    PREEMPTION_EXPLANATION_KEY,
    REASON_PREEMPTION_BY_SCHEDULER,
    ActionType,
    Candidate,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    DefaultPreemptionArgs,
    Evaluator,
    EventResource,
    NodeInfo,
    NodeToStatus,
    PDBView,
    PodInfo,
    PostFilterResult,
    QueueingHint,
    Status,
    hookimpl,
    importance_key,
    select_victims_on_node,
    select_victims_on_nodes,
)
from kubesched.api import Pod, WorkloadPodGroup
from kubesched.api.podgroups import WORKLOAD_POD_GROUP
from kubesched_builtin.names import DEFAULT_PREEMPTION

NAME = DEFAULT_PREEMPTION

ERR_REASON_PREEMPTION_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
ERR_REASON_TERMINATING_ON_NOMINATED_NODE = (
    "not eligible due to a terminating pod on the nominated node."
)
ERR_REASON_WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
"""PreEnqueue's reason while the pod's asynchronous preemption makes its API calls."""
ERR_REASON_WAITING_FOR_POD_GROUP_PREEMPTION = (
    "waiting for the preemption for this pod group to be finished"
)
"""PreEnqueue's reason for a pod of a pod group while its group's asynchronous preemption
(WorkloadAwarePreemption) makes its API calls."""
GENERIC_WORKLOAD = "GenericWorkload"
"""The alpha gate under which a pod of a PodGroup is scheduled, and held, with its group."""
MESSAGE_PREFIX = "preemption: "
WORKLOAD_AWARE_PREEMPTION = "WorkloadAwarePreemption"
"""The alpha gate under which kube-scheduler v1.36 preempts for a pod group as a whole,
never for one of its pods alone."""
ERR_REASON_WORKLOAD_AWARE = MESSAGE_PREFIX + "not eligible due to workload aware preemption enabled"
"""PostFilter's answer for a pod of a pod group while that gate is on."""
TOPOLOGY_AWARE_SCHEDULING = "TopologyAwareWorkloadScheduling"
"""The alpha gate under which a pod group is tried on placements: pod-by-pod preemption
would run once per placement, so v1.36 does not preempt for the pods of a group at all."""
ERR_REASON_PLACEMENT_BASED = (
    MESSAGE_PREFIX + "not eligible due to placement-based pod group scheduling limitation"
)
"""PostFilter's answer for a pod of a pod group while TopologyAwareWorkloadScheduling is
on (and WorkloadAwarePreemption off), as kube-scheduler v1.36.2 words it."""
"""Upstream's DefaultPreemption prefixes every non-empty message of the evaluator."""

PREEMPT_NEVER = "Never"


def pod_terminating_by_preemption(pod_info: PodInfo) -> bool:
    """Whether the pod is terminating because the scheduler preempted it: it has a
    ``deletionTimestamp`` and a ``DisruptionTarget=True`` condition with reason
    ``PreemptionByScheduler`` (upstream ``podTerminatingByPreemption``)."""
    pod = pod_info.pod
    if pod.metadata.deletion_timestamp is None:
        return False
    for cond in pod.status.conditions or ():
        if cond.type == DISRUPTION_TARGET:
            return cond.status == "True" and cond.reason == REASON_PREEMPTION_BY_SCHEDULER
    return False


def _skip_after_pod_deletion(pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
    """Upstream ``isPodSchedulableAfterPodDeletion``: always Skip (see events_to_register)."""
    return QueueingHint.SKIP


def _any_victim_eligible(node_info: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
    """Upstream's default ``IsEligiblePod``: no filtering beyond the priority."""
    return True


class DefaultPreemption:
    """When a pod fits no node, finds the node where deleting the fewest, least important
    lower-priority pods lets it fit, deletes them and nominates the pod to that node.

    Victim selection and candidate choice are upstream's; the generic part lives in
    :class:`~kubesched_builtin.defaultpreemption.evaluator.Evaluator`, which other
    preemption plugins can reuse. ``is_eligible_pod(node_info, victim, preemptor)`` and
    ``more_important_pod`` are attributes a subclass or embedder may replace, as
    upstream's ``IsEligiblePod`` / ``MoreImportantPod`` (the latter given as a sort key,
    most important first).
    """

    name = NAME
    Args = DefaultPreemptionArgs

    def __init__(self, args: DefaultPreemptionArgs | None, handle: Any) -> None:
        self.args = args or DefaultPreemptionArgs()
        self.handle = handle
        self.evaluator = Evaluator(NAME, handle, self)
        # Upstream's default: no filtering beyond "lower priority than the preemptor".
        self.is_eligible_pod: Callable[[NodeInfo, PodInfo, PodInfo], bool] = _any_victim_eligible
        self.importance_key: Callable[[PodInfo], Any] = importance_key
        enabled = getattr(handle, "feature_enabled", None)
        self.workload_aware = enabled is not None and enabled(WORKLOAD_AWARE_PREEMPTION)
        self.placement_based = enabled is not None and enabled(TOPOLOGY_AWARE_SCHEDULING)
        self.generic_workload = enabled is not None and enabled(GENERIC_WORKLOAD)

    # -- extension points ------------------------------------------------------------------
    @hookimpl
    def post_filter(
        self,
        state: CycleState,
        pod_info: PodInfo,
        filtered_node_status_map: NodeToStatus,
    ) -> PostFilterResult | Status:
        metrics = getattr(self.handle, "metrics", None)
        if self.workload_aware and pod_info.pod.spec.scheduling_group is not None:
            # Preemption for the pods of a pod group is the group's (not modelled here):
            # per pod, kube-scheduler v1.36 only says so, and counts the attempt.
            if metrics is not None:
                metrics.preemption_attempts.inc()
            return Status(Code.UNSCHEDULABLE, ERR_REASON_WORKLOAD_AWARE)
        if self.placement_based and pod_info.pod.spec.scheduling_group is not None:
            if metrics is not None:
                metrics.preemption_attempts.inc()
            return Status(Code.UNSCHEDULABLE, ERR_REASON_PLACEMENT_BASED)
        try:
            result, status = self.evaluator.preempt(state, pod_info, filtered_node_status_map)
        finally:
            # Upstream counts every PostFilter call as an attempt (a deferred Inc).
            if metrics is not None:
                metrics.preemption_attempts.inc()
        details = state.get(PREEMPTION_EXPLANATION_KEY)
        nominated = result.nominated_node_name if result is not None else None
        if status.is_success() and result is not None:
            return PostFilterResult(nominated, details=details)
        msg = status.message()
        if msg:
            status = Status(status.code, MESSAGE_PREFIX + msg, error=status.error)
        # With the rejection, a nomination of "" clears the pod's stale nomination, as
        # upstream's (result, status) pair does.
        return PostFilterResult(nominated, status=status, details=details)

    @hookimpl
    def pre_enqueue(self, pod: Pod, pod_info: PodInfo) -> Status | None:
        """Keep a pod out of the active queue while its asynchronous preemption is still
        making API calls (``SchedulerAsyncPreemption``; with the gate off, never). Under
        GenericWorkload a pod of a pod group is held while its group's preemption is (a
        pod whose PodGroup does not exist is not this plugin's to hold), never for one of
        its own."""
        if not self.evaluator.async_preemption:
            return None
        group = pod_info.pod.spec.scheduling_group
        if self.generic_workload and group is not None:
            pod_group = self._pod_group(pod_info.namespace, group.pod_group_name)
            if pod_group is not None and self.evaluator.executor.is_running_preemption(
                pod_group.metadata.uid or ""
            ):
                return Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    ERR_REASON_WAITING_FOR_POD_GROUP_PREEMPTION,
                )
            return None
        if self.evaluator.is_pod_running_preemption(pod_info.uid):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_WAITING_FOR_PREEMPTION)
        return None

    def _pod_group(self, namespace: str, name: str | None) -> WorkloadPodGroup | None:
        """The Workload API PodGroup ``namespace/name`` as the lister has it, or None."""
        lister = getattr(self.handle, "lister", None)
        if not name or lister is None:
            return None
        found = lister.get_object(WORKLOAD_POD_GROUP, namespace, name)
        return found if isinstance(found, WorkloadPodGroup) else None

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.evaluator.async_preemption:
            # Synchronous: the plugin never gates or rejects a pod (upstream's nil).
            return []
        # Upstream registers pod deletions for its PreEnqueue gate, with a hint that always
        # says Skip: the plugins that rejected the pod (which the victims' deletion may
        # help) decide when it is retried, and PreEnqueue then lets it through.
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE), _skip_after_pod_deletion
            )
        ]

    # -- PreemptionInterface ---------------------------------------------------------------
    def calculate_num_candidates(self, num_nodes: int) -> int:
        """How many candidates the dry run looks for among ``num_nodes`` nodes (upstream
        ``calculateNumCandidates``): ``num_nodes × percentage // 100``, at least the
        absolute minimum, at most ``num_nodes``."""
        return self.args.num_candidates(num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random offset (the handle's seedable ``rng``) and :meth:`calculate_num_candidates`."""
        rng = self.handle.rng
        return rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def is_preemption_allowed(
        self, node_info: NodeInfo, victim: PodInfo, preemptor: PodInfo
    ) -> bool:
        """The victim has a lower priority than the preemptor and ``is_eligible_pod`` agrees."""
        return victim.priority < preemptor.priority and self.is_eligible_pod(
            node_info, victim, preemptor
        )

    def pod_eligible_to_preempt_others(
        self, pod_info: PodInfo, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        """Upstream ``PodEligibleToPreemptOthers``.

        Not eligible: ``preemptionPolicy: Never``; or the pod is nominated to a node where
        a lower-priority pod is terminating because of a preemption (the pod already
        preempted and waits for its victims), unless Filter now finds that node
        ``UnschedulableAndUnresolvable``.
        """
        pod = pod_info.pod
        if pod.spec.preemption_policy == PREEMPT_NEVER:
            return False, ERR_REASON_PREEMPTION_POLICY_NEVER
        nominated = pod.status.nominated_node_name or ""
        if nominated:
            if (
                nominated_node_status is not None
                and nominated_node_status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            ):
                return True, ""
            node_info = self.handle.snapshot.get(nominated)
            if node_info is not None:
                for p in node_info.pods:
                    if self.is_preemption_allowed(
                        node_info, p, pod_info
                    ) and pod_terminating_by_preemption(p):
                        return False, ERR_REASON_TERMINATING_ON_NOMINATED_NODE
        return True, ""

    def select_victims_on_node(
        self,
        state: CycleState,
        pod_info: PodInfo,
        node_info: NodeInfo,
        pdbs: Sequence[PDBView],
    ) -> tuple[list[PodInfo], int, Status]:
        """Upstream ``SelectVictimsOnNode`` on clones of the node and the cycle state
        (the SDK's ``select_victims_on_node``): every pod the preemptor may preempt is
        chosen before any is removed; the victims are those not reprieved."""
        return select_victims_on_node(
            self.handle,
            state,
            pod_info,
            node_info,
            pdbs,
            lambda p: self.is_preemption_allowed(node_info, p, pod_info),
            decide_first=True,
            importance=self.importance_key,
        )

    def select_victims_on_nodes(
        self,
        state: CycleState,
        pod_info: PodInfo,
        nodes: Sequence[NodeInfo],
        pdbs: Sequence[PDBView],
    ) -> list[tuple[list[PodInfo], int, Status]] | None:
        """:meth:`select_victims_on_node` for every node of ``nodes`` at once (the SDK's
        ``select_victims_on_nodes``), or ``None`` when that cannot be done exactly."""
        return select_victims_on_nodes(
            self.handle,
            state,
            pod_info,
            nodes,
            self._potential_victims(nodes, pod_info),
            pdbs,
            importance=self.importance_key,
        )

    def _potential_victims(
        self, nodes: Sequence[NodeInfo], pod_info: PodInfo
    ) -> list[list[PodInfo]]:
        """Per node, the pods the preemptor may preempt, in the node's order."""
        if self.is_eligible_pod is _any_victim_eligible:
            # Upstream's default: only the priority decides, compared inline.
            priority = pod_info.priority
            return [[p for p in ni.pods if p.priority < priority] for ni in nodes]
        return [[p for p in ni.pods if self.is_preemption_allowed(ni, p, pod_info)] for ni in nodes]

    def ordered_score_funcs(
        self, candidates: Sequence[Candidate]
    ) -> list[Callable[[Candidate], float]] | None:
        """None: upstream's default criteria (see ``pick_one_node_for_preemption``)."""
        return None


__all__ = [
    "ERR_REASON_NO_VICTIMS",
    "ERR_REASON_PREEMPTION_POLICY_NEVER",
    "ERR_REASON_TERMINATING_ON_NOMINATED_NODE",
    "ERR_REASON_WAITING_FOR_POD_GROUP_PREEMPTION",
    "ERR_REASON_WAITING_FOR_PREEMPTION",
    "MESSAGE_PREFIX",
    "NAME",
    "DefaultPreemption",
    "DefaultPreemptionArgs",
    "pod_terminating_by_preemption",
]
