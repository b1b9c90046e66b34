"""DefaultPreemption: preempt lower-priority pods for a pod that fits no node (PostFilter)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from kubesched import (
    DISRUPTION_TARGET,
    PREEMPTION_EXPLANATION_KEY,
    REASON_PREEMPTION_BY_SCHEDULER,
    ActionType,
    Candidate,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Evaluator,
    EventResource,
    NodeInfo,
    NodeToStatus,
    PDBView,
    PluginArgs,
    PodInfo,
    PostFilterResult,
    QueueingHint,
    Status,
    filter_pods_with_pdb_violation,
    hookimpl,
    importance_key,
)
from kubesched.api import Pod
from kubesched.framework.preemption import pdbs_spent_by, pod_start_time
from kubesched.framework.preemption_batch import NodeCopies
from kubesched.framework.status import not_none_mask
from kubesched_builtin.names import DEFAULT_PREEMPTION

NAME = DEFAULT_PREEMPTION

ERR_REASON_PREEMPTION_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
ERR_REASON_TERMINATING_ON_NOMINATED_NODE = (
    "not eligible due to a terminating pod on the nominated node."
)
ERR_REASON_NO_VICTIMS = "No preemption victims found for incoming pod"
ERR_REASON_WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
"""PreEnqueue's reason while the pod's asynchronous preemption makes its API calls."""
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

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100


class DefaultPreemptionArgs(PluginArgs):
    """``DefaultPreemptionArgs``: how many candidate nodes the dry run looks for.

    The dry run stops after ``max(numNodes × minCandidateNodesPercentage / 100,
    minCandidateNodesAbsolute)`` candidates (at most the number of nodes where preemption
    might help): more candidates may give a better choice of victims, at a higher cost.
    """

    min_candidate_nodes_percentage: int = Field(
        default=DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE,
        description="The minimum number of candidates to shortlist, as a percentage of "
        "the nodes where preemption might help. Range 0..100; default 10.",
    )
    min_candidate_nodes_absolute: int = Field(
        default=DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE,
        description="The minimum absolute number of candidates to shortlist. At least 0; "
        "default 100. Must not be 0 when minCandidateNodesPercentage is 0.",
    )

    @model_validator(mode="after")
    def _validate(self) -> DefaultPreemptionArgs:
        # upstream ValidateDefaultPreemptionArgs, messages as field.Error renders them.
        pct, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        errs: list[str] = []
        if pct < 0 or pct > 100:
            errs.append(
                f"minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]"
            )
        if absolute < 0:
            errs.append(
                f"minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)"
            )
        if pct == 0 and absolute == 0:
            errs.append(
                "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same "
                "time as minCandidateNodesAbsolute"
            )
            errs.append(
                "minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same "
                "time as minCandidateNodesPercentage"
            )
        if errs:
            # utilerrors.Aggregate: one message alone, several as "[a, b]".
            raise ValueError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
        return self


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


_PRIORITY = attrgetter("priority")


def _pdb_violations(
    flat: list[PodInfo],
    pdbs: Sequence[PDBView],
    ranked: np.ndarray,
    owner: np.ndarray,
    starts: np.ndarray,
) -> np.ndarray:
    """``filter_pods_with_pdb_violation`` on every node's pods at once: for the pods in
    ``ranked`` order (each node's, ``owner``, contiguous from ``starts``, in importance
    order), whether removing them violates a PDB. Each PDB's budget is spent per node, pod
    by pod in that order: a pod violates when, counting it, more pods of its node spent
    some PDB selecting it than the PDB allows."""
    spends = np.zeros((len(flat), len(pdbs)), dtype=np.int64)
    for q, pi in enumerate(flat):
        spends[q, pdbs_spent_by(pi, pdbs)] = 1
    spends = spends[ranked]
    spent = np.cumsum(spends, axis=0)
    # Counted per node: less what the nodes before it spent.
    before = np.vstack((np.zeros((1, len(pdbs)), dtype=np.int64), spent))[starts[owner]]
    allowed = np.array([p.disruptions_allowed for p in pdbs], dtype=np.int64)
    return ((spends > 0) & (spent - before > allowed)).any(axis=1)


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
        making API calls (``SchedulerAsyncPreemption``; with the gate off, never)."""
        if self.evaluator.async_preemption and self.evaluator.is_pod_running_preemption(
            pod_info.uid
        ):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_WAITING_FOR_PREEMPTION)
        return None

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
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

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
        """Upstream ``SelectVictimsOnNode`` on clones of the node and the cycle state.

        Removes every pod the preemptor may preempt (through the PreFilter RemovePod
        extensions); if the preemptor still does not fit (counting nominated pods), the
        node is no candidate and Filter's status says why. Otherwise it reprieves as many
        pods as it can, adding each back (AddPod extensions) and keeping it if the
        preemptor still fits: first the pods whose eviction would violate a PDB, then the
        others, each group from the most important down. The pods not reprieved are the
        victims, most important first, with how many of them violate a PDB.
        """
        handle = self.handle

        def remove(victim: PodInfo) -> Status:
            node_info.remove_pod(victim)
            return handle.run_pre_filter_extension_remove_pod(state, pod_info, victim, node_info)

        def add(victim: PodInfo) -> Status:
            node_info.add_pod(victim)
            return handle.run_pre_filter_extension_add_pod(state, pod_info, victim, node_info)

        potential = [
            p for p in node_info.pods if self.is_preemption_allowed(node_info, p, pod_info)
        ]
        for p in potential:
            status = remove(p)
            if not status.is_success():
                return [], 0, status
        if not potential:
            # The node did not change: no need to evaluate it again.
            return [], 0, Status.unresolvable(ERR_REASON_NO_VICTIMS)
        # Whether the pod fails for inter-pod affinity to one of the victims is not
        # checked, as upstream (affinity to lower-priority pods is not recommended).
        status = handle.run_filter_plugins_with_nominated_pods(state, pod_info, node_info)
        if not status.is_success():
            return [], 0, status

        potential.sort(key=self.importance_key)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []

        def reprieve(p: PodInfo) -> tuple[bool, Status]:
            status = add(p)
            if not status.is_success():
                return False, status
            fits = handle.run_filter_plugins_with_nominated_pods(
                state, pod_info, node_info
            ).is_success()
            if not fits:
                status = remove(p)
                if not status.is_success():
                    return False, status
                victims.append(p)
            return fits, Status()

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
        # Keep the victims ordered from most to least important (upstream re-sorts only
        # when both groups were non-empty; otherwise they are in order already).
        if violating and non_violating:
            victims.sort(key=self.importance_key)
        return victims, num_violating, Status()

    def select_victims_on_nodes(
        self,
        state: CycleState,
        pod_info: PodInfo,
        nodes: Sequence[NodeInfo],
        pdbs: Sequence[PDBView],
    ) -> list[tuple[list[PodInfo], int, Status]] | None:
        """:meth:`select_victims_on_node` for every node of ``nodes`` at once, or ``None``
        when that cannot be done exactly (see :class:`NodeCopies`).

        The same steps, each one vectorised Filter run over all the nodes still in play:
        every preemptable pod removed; then, step ``k``, each node's ``k``-th pod in
        reprieve order (PDB-violating pods first, each group most important first)
        added back and kept if the preemptor still fits. A Filter error returns
        ``None``, so that the per-node path reports it node by node.
        """
        potential = self._potential_victims(nodes, pod_info)
        copies = NodeCopies.of(self.handle, state, nodes, potential, pod_info)
        if copies is None:
            return None
        k = len(nodes)
        counts = np.fromiter(map(len, potential), dtype=np.intp, count=k)
        # The nodes without a pod to preempt did not change: no need to evaluate them.
        # They share one Status, as the nodes Filter rejects alike.
        no_victims = Status.unresolvable(ERR_REASON_NO_VICTIMS)
        results: list[tuple[list[PodInfo], int, Status] | None] = [None] * k
        at = np.flatnonzero(counts)
        verdicts, error = copies.filter(state, pod_info, at) if len(at) else (at, None)
        if error is not None:
            return None
        failed = not_none_mask(verdicts)
        for j, verdict in zip(at[failed].tolist(), verdicts[failed].tolist(), strict=True):
            results[j] = ([], 0, verdict)
        play = at[~failed]
        if len(play):
            # Every node still in play passed every Filter plugin; those that depend only
            # on the node pass whatever pods are added back: the steps need not run them.
            state.skip_filter_plugins |= getattr(self.handle, "node_only_filters", frozenset())
            victims = self._reprieve(state, pod_info, copies, potential, play, counts, pdbs)
            if victims is None:
                return None
            for j, v in zip(play.tolist(), victims, strict=True):
                results[j] = v
        return [([], 0, no_victims) if r is None else r for r in results]

    def _potential_victims(
        self, nodes: Sequence[NodeInfo], pod_info: PodInfo
    ) -> list[list[PodInfo]]:
        """Per node, the pods the preemptor may preempt, in the node's order."""
        if self.is_eligible_pod is _any_victim_eligible:
            # Upstream's default: only the priority decides, compared inline.
            priority = pod_info.priority
            return [[p for p in ni.pods if p.priority < priority] for ni in nodes]
        return [[p for p in ni.pods if self.is_preemption_allowed(ni, p, pod_info)] for ni in nodes]

    def _reprieve_order(
        self, potential: list[list[PodInfo]], play: np.ndarray, pdbs: Sequence[PDBView]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per node in ``play``, the reprieve order (indices into its potential pods)
        and how many of them lead with a PDB violation: as ``(order, lengths,
        violating)`` arrays, ``order`` padded with -1, one row per node."""
        pods = [potential[j] for j in play.tolist()]
        n = len(pods)
        lengths = np.fromiter(map(len, pods), dtype=np.intp, count=n)
        width = int(lengths.max())
        order = np.full((n, width), -1, dtype=np.intp)
        violating = np.zeros(n, dtype=np.intp)
        if self.importance_key is importance_key:
            # Upstream's order, most important first (higher priority, then earlier start,
            # ties in the node's order: a stable sort) for all nodes with one lexsort.
            flat = list(chain.from_iterable(pods))
            owner = np.repeat(np.arange(n, dtype=np.intp), lengths)
            starts = np.cumsum(lengths) - lengths
            local = np.arange(len(flat), dtype=np.intp) - np.repeat(starts, lengths)
            priority = np.fromiter(map(_PRIORITY, flat), np.int64, len(flat))
            started = np.fromiter(map(pod_start_time, flat), np.float64, len(flat))
            # ``ranked`` keeps each node's pods where ``flat`` has them, reordered.
            ranked = np.lexsort((local, started, -priority, owner))
            if pdbs:
                violated = _pdb_violations(flat, pdbs, ranked, owner, starts)
                # The violating pods first, each group in importance order.
                ranked = ranked[np.lexsort((np.arange(len(flat)), ~violated, owner))]
                violating = np.bincount(owner, weights=violated, minlength=n).astype(np.intp)
            order[owner, local] = local[ranked]
            return order, lengths, violating
        for r, ps in enumerate(pods):
            index = {id(p): i for i, p in enumerate(ps)}
            ordered = sorted(ps, key=self.importance_key)
            first, rest = filter_pods_with_pdb_violation(ordered, pdbs)
            order[r, : len(ps)] = [index[id(p)] for p in (*first, *rest)]
            violating[r] = len(first)
        return order, lengths, violating

    def _reprieve(
        self,
        state: CycleState,
        pod_info: PodInfo,
        copies: NodeCopies,
        potential: list[list[PodInfo]],
        play: np.ndarray,
        counts: np.ndarray,
        pdbs: Sequence[PDBView],
    ) -> list[tuple[list[PodInfo], int, Status]] | None:
        """The victims of the nodes at ``play`` (where the preemptor fits once all their
        potential pods are gone): step ``s`` adds back each node's ``s``-th pod in
        reprieve order, all nodes in one Filter run, and keeps it where the preemptor
        still fits. ``None`` on a Filter error."""
        order, lengths, violating = self._reprieve_order(potential, play, pdbs)
        victim = np.zeros(order.shape, dtype=bool)
        for step in range(order.shape[1]):
            sel = np.flatnonzero(lengths > step)
            positions, trying = play[sel], order[sel, step]
            verdicts, error = copies.filter(state, pod_info, positions, trying)
            if error is not None:
                return None
            fits = ~not_none_mask(verdicts)
            copies.record(positions, trying, fits)
            victim[sel, step] = ~fits
        # The victims in reprieve order, and how many of them violate a PDB (those among
        # a node's first ``violating`` pods).
        num_violating = (victim & (np.arange(order.shape[1]) < violating[:, None])).sum(axis=1)
        rows, steps = np.nonzero(victim)
        out = []
        ends = np.cumsum(victim.sum(axis=1)).tolist()
        chosen = order[rows, steps].tolist()
        # Both groups non-empty: the victims are re-sorted, as select_victims_on_node does.
        resort = ((violating > 0) & (violating < lengths)).tolist()
        fits = Status()  # shared: nodes that fit alike share a Status
        start = 0
        for j, end, n, again in zip(
            play.tolist(), ends, num_violating.tolist(), resort, strict=True
        ):
            victims = list(map(potential[j].__getitem__, chosen[start:end]))
            start = end
            if again:
                victims.sort(key=self.importance_key)
            out.append((victims, n, fits))
        return out

    def ordered_score_funcs(
        self, candidates: Sequence[Candidate]
    ) -> list[Callable[[Candidate], float]] | None:
        """None: upstream's default criteria (see ``pick_one_node_for_preemption``)."""
        return None


__all__ = [
    "DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE",
    "DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE",
    "ERR_REASON_NO_VICTIMS",
    "ERR_REASON_PREEMPTION_POLICY_NEVER",
    "ERR_REASON_TERMINATING_ON_NOMINATED_NODE",
    "MESSAGE_PREFIX",
    "NAME",
    "DefaultPreemption",
    "DefaultPreemptionArgs",
    "pod_terminating_by_preemption",
]
