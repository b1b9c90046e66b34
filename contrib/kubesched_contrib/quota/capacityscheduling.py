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
from itertools import compress
from operator import attrgetter
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
    select_victims_on_node,
    select_victims_on_nodes,
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
    no_victims_status,
    node_of,
    node_to_wait_on,
    preempt,
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
ERR_REASON_NO_PRE_FILTER_STATE = "Failed to read preFilterState from cycleState"


class PreFilterState(StateData):
    """What PreFilter computed for the pod: its request, and with the requests of the
    pods nominated before it (of its namespace; of all namespaces that count)."""

    __slots__ = ("nominated_in_eq_with_pod_req", "nominated_with_pod_req", "pod_req")

    def __init__(self, pod_req: Resource, in_eq: Resource, total: Resource) -> None:
        self.pod_req = pod_req
        self.nominated_in_eq_with_pod_req = in_eq
        self.nominated_with_pod_req = total


class ElasticQuotaSnapshotState(StateData):
    """The quotas as this cycle sees them; preemption's dry run changes a clone's.

    ``from_pre_filter``: written by this plugin's PreFilter, so that its RemovePod and
    AddPod extensions keep a dry run's quotas current (not so for quotas written by
    hand with the plugin at PostFilter only, as upstream's preemption tests do)."""

    __slots__ = ("from_pre_filter", "infos")

    def __init__(self, infos: ElasticQuotaInfos, from_pre_filter: bool = False) -> None:
        self.infos = infos
        self.from_pre_filter = from_pre_filter

    def clone(self) -> ElasticQuotaSnapshotState:
        return ElasticQuotaSnapshotState(self.infos.clone(), self.from_pre_filter)


class CapacityScheduling:
    """Keeps each namespace within its ElasticQuota: within max always, beyond min only
    while other namespaces leave their min unused, and preempts to give a namespace
    back its min (PreFilter, PostFilter, Reserve)."""

    name = NAME
    sdk_version = "1.6"
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
        state.write(ELASTIC_QUOTA_SNAPSHOT_KEY, ElasticQuotaSnapshotState(infos, True))
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
        reprieve, with the quotas checked after each pod kept: the SDK's
        ``select_victims_on_node`` on the clone's quotas, which its RemovePod and AddPod
        extensions keep current."""
        snap = state.get(ELASTIC_QUOTA_SNAPSHOT_KEY)
        pre = state.get(PRE_FILTER_STATE_KEY)
        if snap is None or pre is None:
            return [], 0, Status.unschedulable(ERR_REASON_NO_PRE_FILTER_STATE)
        quotas = NodeQuotas(snap.infos, pre, pod_info)
        has_quota = quotas.own is not None
        return select_victims_on_node(
            self.handle,
            state,
            pod_info,
            node_info,
            pdbs,
            quotas.may_preempt,
            order=quotas.order(node_info),
            no_victims=lambda ni: no_victims_status(ni, pod_info),
            after_removal=quotas.after_removal if has_quota else None,
            still_over=quotas.still_over if has_quota else None,
        )

    def select_victims_on_nodes(
        self,
        state: CycleState,
        pod_info: PodInfo,
        nodes: Sequence[NodeInfo],
        pdbs: Sequence[PDBView],
    ) -> list[tuple[list[PodInfo], int, Status]] | None:
        """:meth:`select_victims_on_node` for every node of ``nodes`` at once (the SDK's
        ``select_victims_on_nodes``), or ``None`` when that cannot be done exactly. Each
        node's quotas are its own copy (made at its first removal), changed here as the
        RemovePod and AddPod extensions change the clone's in the per-node path (quotas
        that PreFilter did not write take the per-node path)."""
        snap = state.get(ELASTIC_QUOTA_SNAPSHOT_KEY)
        pre = state.get(PRE_FILTER_STATE_KEY)
        if snap is None or pre is None or not snap.from_pre_filter:
            # The per-node path reports the missing state, or leaves hand-made quotas
            # as they are.
            return None
        base = NodeQuotas(snap.infos, pre, pod_info)
        has_quota = base.own is not None
        if not has_quota:
            # No quota: lower-priority pods that have none either, the same question on
            # every node (compared inline: thousands of nodes, no call per pod).
            infos, priority = snap.infos, pod_info.priority
            if infos:
                potential = [
                    [p for p in ni.pods if p.priority < priority and p.namespace not in infos]
                    for ni in nodes
                ]
            else:
                # No quota anywhere: the lower-priority pods, picked by C-level maps.
                lower = priority.__gt__
                potential = [
                    list(compress(pods, map(lower, map(_PRIORITY, pods))))
                    for pods in map(_PODS, nodes)
                ]
        else:
            per_node = [base.copy() for _ in nodes]
            potential = [q.choose(q.order(ni)) for q, ni in zip(per_node, nodes, strict=True)]
        return select_victims_on_nodes(
            self.handle,
            state,
            pod_info,
            nodes,
            potential,
            pdbs,
            no_victims=lambda ni: no_victims_status(ni, pod_info),
            after_removal=(lambda j: per_node[j].after_removal()) if has_quota else None,
            still_over=(lambda j, p: per_node[j].reprieved(p)) if has_quota else None,
        )

    def pre_filter_copies(
        self,
        state: CycleState,
        pod_info: PodInfo,
        table: Any,
        rows: Sequence[int],
        pods: Sequence[Sequence[PodInfo]],
    ) -> _NoFilterCopies:
        """The quotas on copies of nodes, for batched what-ifs: no Filter reads them (the
        plugin has none), and preemption's batched dry run keeps each node's quotas
        itself (:meth:`select_victims_on_nodes`)."""
        return _NO_FILTER_COPIES

    def ordered_score_funcs(
        self, candidates: Sequence[Candidate]
    ) -> list[Callable[[Candidate], float]] | None:
        """None: upstream's default criteria."""
        return None


class _NoFilterCopies:
    """CapacityScheduling's state on copies of nodes as a batch's Filter reads it: nothing
    to read, whatever pods are added or removed."""

    def view(self, positions: Any, weights: Any) -> _NoFilterCopies:
        return self

    def with_added(self, rows: Any, pods: Any) -> _NoFilterCopies:
        return self


_NO_FILTER_COPIES = _NoFilterCopies()


class NodeQuotas:
    """CapacityScheduling's victim decisions on one node's dry run, read from that
    node's quotas ``infos``: who may be preempted (asked pod by pod, each one chosen
    removed before the next question), whether the node breaks a quota once they are
    all gone, and whether a pod reprieved would."""

    __slots__ = ("_shared", "infos", "namespace", "own", "pre", "priority", "within_min")

    def __init__(self, infos: ElasticQuotaInfos, pre: PreFilterState, pod_info: PodInfo) -> None:
        self.infos = infos
        self.pre = pre
        self.namespace, self.priority = pod_info.namespace, pod_info.priority
        self.own = infos.get(self.namespace)
        # Decided once, before any removal: may the pod take back its min from others?
        self.within_min = self.own is not None and not self.own.used_over_min_with(
            pre.nominated_in_eq_with_pod_req
        )
        # True while ``infos`` are another's (copied at the first change).
        self._shared = False

    def copy(self) -> NodeQuotas:
        """These decisions for another node: its quotas copied at their first change."""
        c = object.__new__(NodeQuotas)
        c.infos, c.pre, c.own, c.within_min = self.infos, self.pre, self.own, self.within_min
        c.namespace, c.priority = self.namespace, self.priority
        c._shared = True
        return c

    def may_preempt(self, p: PodInfo) -> bool:
        """Whether ``p`` may be a victim (asked again after each removal)."""
        if self.own is None:
            # No quota: lower-priority pods that have none either.
            return p.namespace not in self.infos and p.priority < self.priority
        if not self.within_min:
            # Beyond its min: only lower-priority pods of its own namespace.
            return p.namespace == self.namespace and p.priority < self.priority
        # Within its min, which others borrowed: their pods while their namespace is
        # still above its min.
        info = self.infos.get(p.namespace)
        return p.namespace != self.namespace and info is not None and info.used_over_min()

    def order(self, node_info: NodeInfo) -> Sequence[PodInfo]:
        """The order the node's pods are asked about: least important first, as upstream
        walks them, when an answer depends on the removals before it (within min);
        else the node's own (the victims are the same, without a sort per node)."""
        if self.within_min:
            return sorted(node_info.pods, key=importance_key, reverse=True)
        return node_info.pods

    def choose(self, order: Sequence[PodInfo]) -> list[PodInfo]:
        """The potential victims among ``order``, each removed from the quotas once
        chosen (as the RemovePod extension does in the per-node dry run)."""
        chosen = []
        for p in order:
            if self.may_preempt(p):
                chosen.append(p)
                self._change(p, -1)
        return chosen

    def after_removal(self) -> Status | None:
        """A rejection when, without its potential victims, the node still breaks the
        preemptor's max or leaves nothing to borrow."""
        own, pod_req = self.own, self.pre.pod_req
        if own is not None and (
            own.used_over_max_with(pod_req) or self.infos.aggregated_used_over_min_with(pod_req)
        ):
            return Status.unschedulable(ERR_REASON_QUOTA_EXCEEDED)
        return None

    def still_over(self) -> bool:
        """Whether, with the pods reprieved so far, the quotas are broken."""
        own = self.own
        return own is not None and (
            own.used_over_max_with(self.pre.nominated_in_eq_with_pod_req)
            or self.infos.aggregated_used_over_min_with(self.pre.nominated_with_pod_req)
        )

    def reprieved(self, p: PodInfo) -> bool:
        """Count ``p`` again (it fits back on the node); True, and ``p`` taken off again,
        when that breaks the quotas."""
        self._change(p, 1)
        if self.still_over():
            self._change(p, -1)
            return True
        return False

    def _change(self, p: PodInfo, sign: int) -> None:
        if self._shared:
            self.infos = self.infos.clone()
            if self.own is not None:
                self.own = self.infos[self.namespace]
            self._shared = False
        info = self.infos.get(p.namespace)
        if info is not None:
            if sign > 0:
                info.add_pod_if_not_present(p)
            else:
                info.delete_pod_if_present(p)


_PRIORITY = attrgetter("priority")
_PODS = attrgetter("pods")


def _quota_of(state: CycleState, pod_info: PodInfo) -> ElasticQuotaInfo | None:
    """The cycle's quota of the pod's namespace, if it has one."""
    snap = state.get(ELASTIC_QUOTA_SNAPSHOT_KEY)
    if snap is None:
        raise KeyError(f'error reading "{ELASTIC_QUOTA_SNAPSHOT_KEY}" from cycleState')
    return snap.infos.get(pod_info.namespace)
