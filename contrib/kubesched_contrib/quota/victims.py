"""Preemption for the quota family's PostFilter plugins: the evaluator's call, and victim
selection on one node (upstream's ``SelectVictimsOnNode`` shape), shared by
CapacityScheduling and PreemptionToleration.

The plugin says which pods may be preempted, one at a time, in the order it chooses;
each one chosen is removed at once (through the PreFilter RemovePod extensions, so the
next choice sees it gone). Then the preemptor must fit, and as many of the removed pods
as possible are reprieved, most important first, PDB-violating ones before the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kubesched import (
    PREEMPTION_EXPLANATION_KEY,
    Code,
    CycleState,
    Evaluator,
    NodeInfo,
    NodeToStatus,
    PDBView,
    PodInfo,
    PostFilterResult,
    Status,
    filter_pods_with_pdb_violation,
    importance_key,
)

__all__ = [
    "ERR_REASON_PREEMPTION_POLICY_NEVER",
    "ERR_REASON_TERMINATING",
    "no_victims_status",
    "node_of",
    "node_to_wait_on",
    "preempt",
    "select_victims",
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


def select_victims(
    handle,
    state: CycleState,
    preemptor: PodInfo,
    node_info: NodeInfo,
    order: Iterable[PodInfo],
    may_preempt: Callable[[PodInfo], bool],
    pdbs: Sequence[PDBView],
    *,
    after_removal: Callable[[], Status | None] | None = None,
    still_over: Callable[[], bool] | None = None,
) -> tuple[list[PodInfo], int, Status]:
    """The victims among the pods of ``node_info`` (a clone, as is ``state``), most
    important first, and how many of them violate a PDB.

    ``order`` lists the node's pods (a copy: the node changes) in the order
    ``may_preempt`` is asked about them; a pod it accepts is removed before the next
    question.
    ``after_removal`` runs once every potential victim is gone and the preemptor fits: a
    non-None status rejects the node. ``still_over`` is asked after each reprieve that
    fits: True makes the reprieved pod a victim again (CapacityScheduling's quota check).
    """

    def remove(victim: PodInfo) -> Status:
        node_info.remove_pod(victim)
        return handle.run_pre_filter_extension_remove_pod(state, preemptor, victim, node_info)

    potential: list[PodInfo] = []
    for p in order:
        if may_preempt(p):
            potential.append(p)
            status = remove(p)
            if not status.is_success():
                return [], 0, status
    if not potential:
        # The node did not change: no need to evaluate it again.
        return [], 0, no_victims_status(node_info, preemptor)
    status = handle.run_filter_plugins_with_nominated_pods(state, preemptor, node_info)
    if not status.is_success():
        return [], 0, status
    if after_removal is not None:
        rejected = after_removal()
        if rejected is not None:
            return [], 0, rejected

    victims: list[PodInfo] = []

    def reprieve(p: PodInfo) -> tuple[bool, Status]:
        node_info.add_pod(p)
        status = handle.run_pre_filter_extension_add_pod(state, preemptor, p, node_info)
        if not status.is_success():
            return False, status
        fits = handle.run_filter_plugins_with_nominated_pods(state, preemptor, node_info)
        fits = fits.is_success()
        # Upstream reports the pod as fitting even when the quota check below makes it a
        # victim after all: it then does not count as a PDB violation.
        if not fits or (still_over is not None and still_over()):
            status = remove(p)
            if not status.is_success():
                return False, status
            victims.append(p)
        return fits, Status()

    ordered = sorted(potential, key=importance_key)
    violating, non_violating = filter_pods_with_pdb_violation(ordered, pdbs)
    num_violating = 0
    for p in violating:
        fits, status = reprieve(p)
        if not status.is_success():
            return [], 0, status
        if not fits:
            num_violating += 1
    for p in non_violating:
        _, status = reprieve(p)
        if not status.is_success():
            return [], 0, status
    if violating and non_violating:
        victims.sort(key=importance_key)
    return victims, num_violating, Status()
