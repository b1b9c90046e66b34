"""CapacityScheduling: ElasticQuota min/max per namespace, borrowing, and preemption to reclaim.

Follows kubernetes-sigs/scheduler-plugins ``pkg/capacityscheduling``. PreFilter rejects
a pod whose namespace would go above its quota's max, or when all quotas together would
go above the sum of their mins (nothing left to borrow), counting the pods nominated
before it. PostFilter preempts through the SDK's preemption evaluator: a pod whose
namespace stays within min with it takes back what other namespaces borrowed (their pods,
while their namespace is above its min, whatever their priority); a pod that goes beyond
its min preempts only lower-priority pods of its own namespace; a pod without a quota
preempts lower-priority pods without a quota. Reserve and Unreserve count the pod in its
namespace's usage at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kubesched import (
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
    PodInfo,
    PostFilterResult,
    Resource,
    StateData,
    Status,
    hookimpl,
    importance_key,
)

from .api import ELASTIC_QUOTA_KIND, ElasticQuota
from .elasticquota import (
    ElasticQuotaInfo,
    ElasticQuotaInfos,
    QuotaUsage,
    add_resource,
    request_of,
)
from .victims import (
    ERR_REASON_PREEMPTION_POLICY_NEVER,
    ERR_REASON_TERMINATING,
    node_of,
    node_to_wait_on,
    preempt,
    select_victims,
)

NAME = "CapacityScheduling"

PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ELASTIC_QUOTA_SNAPSHOT_KEY = "ElasticQuotaSnapshot"

ERR_REASON_OVER_MAX = (
    "Pod {pod} is rejected in PreFilter because ElasticQuota {quota} is more than Max"
)
"""PreFilter: the namespace would use more than its max (``str.format`` template)."""
ERR_REASON_OVER_MIN = (
    "Pod {pod} is rejected in PreFilter because total ElasticQuota used is more than min"
)
"""PreFilter: all quotas together would use more than the sum of their mins."""
ERR_REASON_QUOTA_EXCEEDED = "global quota max exceeded"
"""Dry run: even without its potential victims, the node's preemption breaks a quota."""
ERR_REASON_NO_STATE = "not eligible due to failed to read from cycleState"


class PreFilterState(StateData):
    """What PreFilter computed for the pod: its request, and with the requests of the
    pods nominated before it (of its namespace; of all namespaces that count)."""

    __slots__ = ("nominated_in_eq_with_pod_req", "nominated_with_pod_req", "pod_req")

    def __init__(self, pod_req: Resource, in_eq: Resource, total: Resource) -> None:
        self.pod_req = pod_req
        self.nominated_in_eq_with_pod_req = in_eq
        self.nominated_with_pod_req = total


class ElasticQuotaSnapshotState(StateData):
    """The quotas as this cycle sees them; preemption's dry run changes a clone's."""

    __slots__ = ("infos",)

    def __init__(self, infos: ElasticQuotaInfos) -> None:
        self.infos = infos

    def clone(self) -> ElasticQuotaSnapshotState:
        return ElasticQuotaSnapshotState(self.infos.clone())


class CapacityScheduling:
    """Keeps each namespace within its ElasticQuota: within max always, beyond min only
    while other namespaces leave their min unused, and preempts to give a namespace
    back its min (PreFilter, PostFilter, Reserve)."""

    name = NAME
    sdk_version = "1.5"
    reads = (ELASTIC_QUOTA_KIND,)
    """Read through the lister: a real cluster's backend watches ElasticQuotas."""

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle
        self.usage = QuotaUsage()
        self.evaluator = Evaluator(NAME, handle, self)
        # The cycle state of the PostFilter call in progress: the evaluator asks
        # ``pod_eligible_to_preempt_others`` without it (upstream's preemptor holds it).
        self._state: CycleState | None = None

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A deleted pod frees quota; a new or changed ElasticQuota changes min/max.
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(EventResource.ELASTIC_QUOTA, ActionType.ALL)),
        ]

    # -- the quotas ------------------------------------------------------------------------
    def quotas(self) -> dict[str, ElasticQuota]:
        """The ElasticQuota of each namespace that has one (the first by name)."""
        lister = self.handle.lister
        out: dict[str, ElasticQuota] = {}
        if lister is None:
            return out
        for eq in lister.list_objects(ELASTIC_QUOTA_KIND):
            out.setdefault(eq.metadata.namespace or "default", eq)
        return out

    def elastic_quota_infos(self, snapshot: Any) -> ElasticQuotaInfos:
        """Every quota with its namespace's usage: the pods of ``snapshot`` (the cycle's)
        and those reserved since."""
        used, reserved = self.usage.used(snapshot)
        return ElasticQuotaInfos(
            (ns, ElasticQuotaInfo.of(eq, used.get(ns), reserved.get(ns, frozenset())))
            for ns, eq in self.quotas().items()
        )

    # -- PreFilter -------------------------------------------------------------------------
    @hookimpl
    def pre_filter(self, state: CycleState, pod_info: PodInfo) -> Status | None:
        infos = self.elastic_quota_infos(self.handle.snapshot)
        state.write(ELASTIC_QUOTA_SNAPSHOT_KEY, ElasticQuotaSnapshotState(infos))
        pod_req = request_of(pod_info)
        ns = pod_info.namespace
        eq = infos.get(ns)
        if eq is None:
            state.write(PRE_FILTER_STATE_KEY, PreFilterState(pod_req, Resource(), Resource()))
            return None
        in_eq, total = self._nominated_requests(pod_info, infos)
        add_resource(in_eq, pod_req)
        add_resource(total, pod_req)
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(pod_req, in_eq, total))
        if eq.used_over_max_with(in_eq):
            return Status(
                Code.UNSCHEDULABLE, ERR_REASON_OVER_MAX.format(pod=pod_info.key, quota=ns)
            )
        if infos.aggregated_used_over_min_with(total):
            return Status(Code.UNSCHEDULABLE, ERR_REASON_OVER_MIN.format(pod=pod_info.key))
        return None

    def _nominated_requests(
        self, pod_info: PodInfo, infos: ElasticQuotaInfos
    ) -> tuple[Resource, Resource]:
        """The requests of the pods nominated to the snapshot's nodes that go before the
        pod: those of its namespace with at least its priority (both sums), and those of
        other namespaces with a quota still within min (the second sum)."""
        in_eq, total = Resource(), Resource()
        nominator = self.handle.nominator
        if nominator is None:
            return in_eq, total
        nominated = nominator.nominated_pods_by_node()
        if not nominated:
            return in_eq, total
        snapshot = self.handle.snapshot
        for node_name, pods in nominated.items():
            if node_of(snapshot, node_name) is None:
                continue
            for p in pods:
                info = infos.get(p.namespace)
                if p.uid == pod_info.uid or info is None:
                    continue
                if p.namespace == pod_info.namespace and p.priority >= pod_info.priority:
                    add_resource(in_eq, request_of(p))
                    add_resource(total, request_of(p))
                elif p.namespace != pod_info.namespace and not info.used_over_min():
                    add_resource(total, request_of(p))
        return in_eq, total

    @hookimpl
    def pre_filter_add_pod(self, state: CycleState, pod_info_to_add: PodInfo) -> Status | None:
        info = _quota_of(state, pod_info_to_add)
        if info is not None:
            info.add_pod_if_not_present(pod_info_to_add)
        return None

    @hookimpl
    def pre_filter_remove_pod(
        self, state: CycleState, pod_info_to_remove: PodInfo
    ) -> Status | None:
        info = _quota_of(state, pod_info_to_remove)
        if info is not None:
            info.delete_pod_if_present(pod_info_to_remove)
        return None

    # -- PostFilter ------------------------------------------------------------------------
    @hookimpl
    def post_filter(
        self, state: CycleState, pod_info: PodInfo, filtered_node_status_map: NodeToStatus
    ) -> PostFilterResult | Status:
        self._state = state
        try:
            return preempt(self.evaluator, state, pod_info, filtered_node_status_map)
        finally:
            self._state = None

    # -- Reserve ---------------------------------------------------------------------------
    @hookimpl
    def reserve(self, pod_info: PodInfo, node_name: str) -> Status | None:
        self.usage.reserve(pod_info, node_name, self.handle.snapshot)
        return None

    @hookimpl
    def unreserve(self, pod_info: PodInfo) -> None:
        self.usage.unreserve(pod_info)

    # -- PreemptionInterface ---------------------------------------------------------------
    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """Every node where preemption might help, from the first (upstream's choice)."""
        return 0, num_nodes

    def pod_eligible_to_preempt_others(
        self, pod_info: PodInfo, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        """Not with ``preemptionPolicy: Never``; not while a pod it may have preempted
        still terminates on its nominated node (upstream's quota-aware rule)."""
        if pod_info.pod.spec.preemption_policy == "Never":
            return False, ERR_REASON_PREEMPTION_POLICY_NEVER
        state = self._state
        pre = state.get(PRE_FILTER_STATE_KEY) if state is not None else None
        if pre is None:
            return False, ERR_REASON_NO_STATE
        snap = state.get(ELASTIC_QUOTA_SNAPSHOT_KEY)
        node_info = node_to_wait_on(self.handle.snapshot, pod_info, nominated_node_status)
        if snap is None or node_info is None:
            return True, ""
        infos: ElasticQuotaInfos = snap.infos
        own = infos.get(pod_info.namespace)
        terminating = [p for p in node_info.pods if p.pod.metadata.deletion_timestamp is not None]
        if own is not None:
            over_min = own.used_over_min_with(pre.nominated_in_eq_with_pod_req)
            for p in terminating:
                info = infos.get(p.namespace)
                if info is None:
                    continue
                if p.namespace == pod_info.namespace and p.priority < pod_info.priority:
                    return False, ERR_REASON_TERMINATING
                if p.namespace != pod_info.namespace and not over_min and info.used_over_min():
                    # Its room can go to the preemptor, which may reclaim borrowed quota.
                    return False, ERR_REASON_TERMINATING
        else:
            for p in terminating:
                if p.namespace not in infos and p.priority < pod_info.priority:
                    return False, ERR_REASON_TERMINATING
        return True, ""

    def select_victims_on_node(
        self,
        state: CycleState,
        pod_info: PodInfo,
        node_info: NodeInfo,
        pdbs: Sequence[PDBView],
    ) -> tuple[list[PodInfo], int, Status]:
        """The potential victims by quota (see the module docstring), then upstream's
        reprieve, with the quotas checked after each pod kept."""
        snap = state.get(ELASTIC_QUOTA_SNAPSHOT_KEY)
        pre = state.get(PRE_FILTER_STATE_KEY)
        if snap is None or pre is None:
            return [], 0, Status.unschedulable("Failed to read preFilterState from cycleState")
        infos: ElasticQuotaInfos = snap.infos
        own = infos.get(pod_info.namespace)
        ns, priority = pod_info.namespace, pod_info.priority
        after_removal: Callable[[], Status | None] | None = None
        still_over: Callable[[], bool] | None = None
        if own is None:

            def may_preempt(p: PodInfo) -> bool:
                # No quota: lower-priority pods that have none either.
                return p.namespace not in infos and p.priority < priority

        elif own.used_over_min_with(pre.nominated_in_eq_with_pod_req):

            def may_preempt(p: PodInfo) -> bool:
                # Beyond its min: only lower-priority pods of its own namespace.
                return p.namespace == ns and p.priority < priority

        else:

            def may_preempt(p: PodInfo) -> bool:
                # Within its min, which others borrowed: their pods while their namespace
                # is still above its min (asked again after each removal).
                info = infos.get(p.namespace)
                return p.namespace != ns and info is not None and info.used_over_min()

        if own is not None:
            quota: ElasticQuotaInfo = own

            def after_removal() -> Status | None:
                if quota.used_over_max_with(pre.pod_req) or infos.aggregated_used_over_min_with(
                    pre.pod_req
                ):
                    return Status.unschedulable(ERR_REASON_QUOTA_EXCEEDED)
                return None

            def still_over() -> bool:
                return quota.used_over_max_with(
                    pre.nominated_in_eq_with_pod_req
                ) or infos.aggregated_used_over_min_with(pre.nominated_with_pod_req)

        # Least important first, as upstream walks the node's pods.
        order = sorted(node_info.pods, key=importance_key, reverse=True)
        return select_victims(
            self.handle,
            state,
            pod_info,
            node_info,
            order,
            may_preempt,
            pdbs,
            after_removal=after_removal,
            still_over=still_over,
        )

    def ordered_score_funcs(
        self, candidates: Sequence[Candidate]
    ) -> list[Callable[[Candidate], float]] | None:
        """None: upstream's default criteria."""
        return None


def _quota_of(state: CycleState, pod_info: PodInfo) -> ElasticQuotaInfo | None:
    """The cycle's quota of the pod's namespace, if it has one."""
    snap = state.get(ELASTIC_QUOTA_SNAPSHOT_KEY)
    if snap is None:
        raise KeyError(f'error reading "{ELASTIC_QUOTA_SNAPSHOT_KEY}" from cycleState')
    return snap.infos.get(pod_info.namespace)
