"""Preemption for the quota family's PostFilter plugins, shared by CapacityScheduling and
PreemptionToleration: the evaluator's call, the nominated node to wait on, and their
status for a node without victims (the victims themselves are the SDK's
``select_victims_on_node`` / ``select_victims_on_nodes``).
"""

from __future__ import annotations

from typing import Any

from kubesched import (
    PREEMPTION_EXPLANATION_KEY,
    Code,
    CycleState,
    Evaluator,
    NodeInfo,
    NodeToStatus,
    PodInfo,
    PostFilterResult,
    Status,
)

__all__ = [
    "ERR_REASON_PREEMPTION_POLICY_NEVER",
    "ERR_REASON_TERMINATING",
    "no_victims_status",
    "node_of",
    "node_to_wait_on",
    "preempt",
]

ERR_REASON_PREEMPTION_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
ERR_REASON_TERMINATING = "not eligible due to a terminating pod on the nominated node."


def preempt(
    evaluator: Evaluator, state: CycleState, pod_info: PodInfo, statuses: NodeToStatus
) -> PostFilterResult:
    """A PostFilter's preemption through ``evaluator``: the nominated node, or the status
    saying why none (a nomination of "" clears a stale one), with the explanation; every
    call counts as a preemption attempt, as upstream's deferred metric."""
    metrics = getattr(evaluator.handle, "metrics", None)
    try:
        result, status = evaluator.preempt(state, pod_info, statuses)
    finally:
        if metrics is not None:
            metrics.preemption_attempts.inc()
    details = state.get(PREEMPTION_EXPLANATION_KEY)
    nominated = result.nominated_node_name if result is not None else None
    if status.is_success() and result is not None:
        return PostFilterResult(nominated, details=details)
    return PostFilterResult(nominated, status=status, details=details)


def node_of(snapshot: Any, name: str) -> NodeInfo | None:
    """The snapshot's NodeInfo of ``name``, or None."""
    try:
        return snapshot.get(name)
    except KeyError:
        return None


def node_to_wait_on(
    snapshot: Any, pod_info: PodInfo, nominated_node_status: Status | None
) -> NodeInfo | None:
    """The pod's nominated node, whose terminating pods may be its earlier victims (it
    then waits instead of preempting more); None when it has no nomination, when Filter
    now finds that node unresolvable, or when the snapshot lacks it."""
    nominated = pod_info.pod.status.nominated_node_name or ""
    if not nominated:
        return None
    if (
        nominated_node_status is not None
        and nominated_node_status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    ):
        return None
    return node_of(snapshot, nominated)


def no_victims_status(node_info: NodeInfo, preemptor: PodInfo) -> Status:
    """Upstream's status for a node without a pod to preempt (the node is not tried again)."""
    return Status.unresolvable(
        f"No victims found on node {node_info.name} for preemptor pod {preemptor.name}"
    )
