"""NodeResourceTopologyMatch: NUMA-aware Filter and Score from NodeResourceTopology objects.

Follows kubernetes-sigs/scheduler-plugins ``pkg/noderesourcetopology``. Filter predicts
the kubelet's Topology Manager admission: on a node whose NRT object reports the
``single-numa-node`` policy, a Guaranteed or Burstable pod (or a BestEffort one asking
for a device) must fit one NUMA zone, per container (scope ``container``, the default)
or as a whole (scope ``pod``); the other policies admit whatever fits the node. Score
ranks nodes for Guaranteed pods by how the request fits each NUMA zone (MostAllocated,
LeastAllocated, BalancedAllocation: single-numa-node nodes only; a node without NRT data
scores 0) or by how few NUMA zones it needs (LeastNUMANodes: any policy).

With ``preemptionMode: Enabled`` it takes part in preemption's dry run: the PreFilter
extensions track the victims, and Filter gives their exclusive resources back to the NUMA
zones the node's agent says they run on (:mod:`.preemption`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from kubesched import (
    MAX_NODE_SCORE,
    ActionType,
    ArgsError,
    ArgsModel,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    NodeBatch,
    NodeInfo,
    PluginArgs,
    PodInfo,
    StateData,
    StateKey,
    Status,
    hookimpl,
    invalid,
    not_supported,
    raise_args_errors,
)
from kubesched.api import CPU, MEMORY, Pod

from .cache import (
    DISCARD_RESERVED,
    OVERRESERVE,
    PASSTHROUGH,
    NodeTopology,
    NRTCache,
    node_resources,
)
from .numa import (
    POLICY_SINGLE_NUMA_NODE,
    QOS_BEST_EFFORT,
    QOS_GUARANTEED,
    SCOPE_POD,
    ScoreStrategy,
    balanced_allocation,
    container_requests,
    container_scope_score,
    filter_reason,
    includes_non_native,
    least_allocated,
    least_numa_container_scope,
    least_numa_pod_scope,
    most_allocated,
    pod_effective_requests,
    pod_qos,
    pod_scope_score,
)
from .preemption import (
    REASON_MISSING_NUMA_MAPPING,
    EvictionSimulationError,
    MissingNUMAMappingError,
    numa_after_eviction,
    zone_allocatable,
)
from .resync import nrt_resource_names

NAME = "NodeResourceTopologyMatch"

ERR_REASON_INVALID_TOPOLOGY = "invalid node topology data"
"""Filter: the node's NRT data may not be used now (a discard-reserved node in flight)."""

MOST_ALLOCATED = "MostAllocated"
LEAST_ALLOCATED = "LeastAllocated"
BALANCED_ALLOCATION = "BalancedAllocation"
LEAST_NUMA_NODES = "LeastNUMANodes"

PREEMPTION_DISABLED = "Disabled"
PREEMPTION_ENABLED = "Enabled"

_STRATEGIES: dict[str, ScoreStrategy | None] = {
    MOST_ALLOCATED: most_allocated,
    LEAST_ALLOCATED: least_allocated,
    BALANCED_ALLOCATION: balanced_allocation,
    LEAST_NUMA_NODES: None,  # scored by NUMA node count, not by a per-zone strategy
}


class ResourceSpec(ArgsModel):
    """A resource the score strategy weighs, and its weight (0 means 1)."""

    name: str
    weight: int = Field(default=1, description="Weight of the resource; 0 or less counts as 1.")


def _default_resources() -> list[ResourceSpec]:
    return [ResourceSpec(name=CPU, weight=1), ResourceSpec(name=MEMORY, weight=1)]


class ScoringStrategy(ArgsModel):
    """``scoringStrategy``: how Score ranks the nodes."""

    type: str = Field(
        default=LEAST_ALLOCATED,
        description="MostAllocated, LeastAllocated, BalancedAllocation or LeastNUMANodes.",
    )
    resources: list[ResourceSpec] = Field(
        default_factory=_default_resources,
        description="Weights by resource (empty: cpu and memory, weight 1).",
    )


class NodeResourceTopologyCache(ArgsModel):
    """``cache``: fine tuning of the overreserve cache. Accepted with upstream's values
    and defaults; see the plugin's page for what applies to kubesched."""

    foreign_pods_detect: Literal["None", "All", "OnlyExclusiveResources"] = "All"
    resync_method: Literal["Autodetect", "All", "OnlyExclusiveResources"] = "Autodetect"
    informer_mode: Literal["Shared", "Dedicated"] = "Dedicated"
    resync_scope: Literal["All", "OnlyResources"] = "All"


class NodeResourceTopologyMatchArgs(PluginArgs):
    """``NodeResourceTopologyMatchArgs`` (scheduler-plugins ``apis/config/v1``) with its
    defaults."""

    scoring_strategy: ScoringStrategy = Field(default_factory=ScoringStrategy)
    cache_resync_period_seconds: int = Field(
        default=0,
        description=(
            "Above 0, the overreserve cache: pods reserved on a node are taken off its NRT "
            "data until the object is updated. 0: the NRT objects as they are."
        ),
    )
    discard_reserved_nodes: bool = Field(
        default=False,
        description=(
            "Reject nodes with a pod reserved but not yet bound (takes precedence over "
            "cacheResyncPeriodSeconds)."
        ),
    )
    cache: NodeResourceTopologyCache = Field(default_factory=NodeResourceTopologyCache)
    preemption_mode: str = Field(
        default=PREEMPTION_DISABLED,
        description=(
            "Enabled: preemption's dry run gives the victims' exclusive resources back to "
            "the NUMA zones the node's agent says they run on. Disabled or Enabled."
        ),
    )

    @model_validator(mode="after")
    def _validate(self) -> NodeResourceTopologyMatchArgs:
        # SetDefaults_NodeResourceTopologyMatchArgs: no resources means cpu and memory;
        # a zero weight means 1.
        strategy = self.scoring_strategy
        resources = strategy.resources or _default_resources()
        resources = [r if r.weight != 0 else ResourceSpec(name=r.name) for r in resources]
        object.__setattr__(strategy, "resources", resources)
        # ValidateNodeResourceTopologyMatchArgs.
        errors: list[ArgsError] = []
        if strategy.type not in _STRATEGIES:
            errors.append(
                invalid(("scoringStrategy", "type"), strategy.type, "invalid ScoringStrategyType")
            )
        if self.preemption_mode not in (PREEMPTION_DISABLED, PREEMPTION_ENABLED):
            errors.append(
                not_supported(
                    ("preemptionMode",),
                    self.preemption_mode,
                    (PREEMPTION_DISABLED, PREEMPTION_ENABLED),
                )
            )
        raise_args_errors("NodeResourceTopologyMatchArgs", errors)
        return self

    @property
    def cache_mode(self) -> str:
        """passthrough, overreserve or discard-reserved, as upstream picks its cache."""
        if self.discard_reserved_nodes:
            return DISCARD_RESERVED
        if self.cache_resync_period_seconds > 0:
            return OVERRESERVE
        return PASSTHROUGH


_MEMO_LIMIT = 64
"""Pod shapes remembered per node's NRT data before the memo starts afresh."""


def _remember(memo: dict[Any, Any], key: Any, node: Any, value: Any) -> None:
    if len(memo) >= _MEMO_LIMIT:
        memo.clear()
    memo[key] = (node, value)


def _requests_key(requests: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(requests.items()))


class Victims(StateData):
    """The pods preemption's dry run has removed from the node, by uid (the plugin's
    PreFilter extensions keep it in the CycleState)."""

    __slots__ = ("pods",)

    def __init__(self, pods: dict[str, Pod] | None = None) -> None:
        self.pods = pods or {}

    def clone(self) -> Victims:
        return Victims(dict(self.pods))


VICTIMS_KEY: StateKey[Victims] = StateKey(f"{NAME}/victims")


class VictimCopies:
    """The victims of copies of some nodes (preemption's batched dry run): ``pods[j]``
    are the pods the dry run may remove from the copy of table row ``rows[j]``."""

    __slots__ = ("pods", "rows")

    def __init__(self, rows: Sequence[int], pods: Sequence[Sequence[PodInfo]]) -> None:
        self.rows = list(rows)
        self.pods = pods

    def view(self, positions: np.ndarray, weights: np.ndarray) -> VictimView:
        """The copies at ``positions``, whose pod ``i`` is removed where ``weights[x, i]``
        is -1."""
        victims: dict[int, Victims] = {}
        for x, j in enumerate(positions.tolist()):
            pods = self.pods[j] if j < len(self.pods) else ()
            # The weights are as wide as the node with the most pods.
            removed = np.flatnonzero(weights[x, : len(pods)] < 0).tolist()
            if removed:
                victims[self.rows[j]] = Victims({pods[i].uid: pods[i].pod for i in removed})
        return VictimView(victims)


class VictimView:
    """Per table row of a node copy, its victims; ``filter_nodes`` reads it from a
    batch's ``copies``."""

    __slots__ = ("victims",)

    def __init__(self, victims: dict[int, Victims]) -> None:
        self.victims = victims

    def with_added(self, rows: Any, pods: Any) -> VictimView:
        """The same victims: the pods added (those nominated to the nodes) are none."""
        return self


@dataclass(frozen=True)
class _PodShape:
    """What Filter and Score read of a pod, worked out once per pod; ``key`` identifies
    pods that get the same verdicts on the same NUMA data."""

    qos: str
    skips_filter: bool
    key: tuple[Any, ...]

    @classmethod
    def of(cls, pod: Pod) -> _PodShape:
        qos = pod_qos(pod)
        key = (
            qos,
            tuple(_requests_key(container_requests(c)) for c in pod.spec.init_containers),
            tuple(_requests_key(container_requests(c)) for c in pod.spec.containers),
            _requests_key(pod_effective_requests(pod)),
        )
        return cls(qos, qos == QOS_BEST_EFFORT and not includes_non_native(pod), key)


class NodeResourceTopologyMatch:
    """Keeps pods off nodes whose kubelet would refuse them for NUMA alignment, and
    prefers nodes where they fit their NUMA zones best (Filter, Score, Reserve); with
    ``preemptionMode: Enabled``, lets preemption free the NUMA zone a pod needs (PreFilter
    extensions)."""

    name = NAME
    sdk_version = "1.6"
    Args = NodeResourceTopologyMatchArgs
    reads = ("NodeResourceTopology",)

    def __init__(self, args: NodeResourceTopologyMatchArgs | None, handle: Any) -> None:
        args = args or NodeResourceTopologyMatchArgs()
        self.strategy_type = args.scoring_strategy.type
        self.strategy = _STRATEGIES[self.strategy_type]
        self.weights = {r.name: r.weight for r in args.scoring_strategy.resources}
        self.cache = NRTCache(
            handle,
            args.cache_mode,
            resync_period=args.cache_resync_period_seconds,
            foreign_pods_detect=args.cache.foreign_pods_detect,
            resync_method=args.cache.resync_method,
        )
        self._last_shape: tuple[Pod, _PodShape] | None = None
        self._reason_codes: dict[str, int] = {}
        self._statuses = np.full(1, None, dtype=object)
        """The Filter status of each reason code (0: None, the node passes)."""
        if args.preemption_mode != PREEMPTION_ENABLED:
            # No victims to track: without active PreFilter extensions, preemption's dry
            # run and the Filter of nodes with nominated pods build no per-copy state.
            self.pre_filter_add_pod = self.pre_filter_remove_pod = None

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A deleted pod frees NUMA resources; a new or resized node may fit; an agent
        # writing a node's NRT object reports what its zones have now.
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE)),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
                )
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE_RESOURCE_TOPOLOGY, ActionType.ADD | ActionType.UPDATE
                )
            ),
        ]

    def _shape(self, pod: Pod) -> _PodShape:
        # Filter and Score see the same pod object for every node of a cycle.
        last = self._last_shape
        if last is not None and last[0] is pod:
            return last[1]
        shape = _PodShape.of(pod)
        self._last_shape = (pod, shape)
        return shape

    @hookimpl
    def pre_filter(self) -> None:
        """Nothing to check: the plugin is at PreFilter for its extensions, which track
        preemption's victims (``preemptionMode: Enabled``)."""
        return None

    @hookimpl
    def pre_filter_remove_pod(
        self, state: CycleState, pod_info_to_remove: PodInfo
    ) -> Status | None:
        victims = state.get(VICTIMS_KEY)
        if victims is None:
            victims = Victims()
            state.write(VICTIMS_KEY, victims)
        victims.pods[pod_info_to_remove.uid] = pod_info_to_remove.pod
        return None

    @hookimpl
    def pre_filter_add_pod(self, state: CycleState, pod_info_to_add: PodInfo) -> Status | None:
        # A reprieved victim runs again (a nominated pod added was no victim).
        victims = state.get(VICTIMS_KEY)
        if victims is not None:
            victims.pods.pop(pod_info_to_add.uid, None)
        return None

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        victims = state.get(VICTIMS_KEY)
        if victims is not None and victims.pods:
            return self._filter_after_eviction(pod, node_info, victims)
        return self._filter_many(pod, [node_info])[0]

    @hookimpl
    def filter_nodes(
        self, state: CycleState, pod: Pod, nodes: NodeBatch
    ) -> Sequence[Status | None] | None:
        shape = self._shape(pod)
        if shape.skips_filter:
            return None
        victims = state.get(VICTIMS_KEY)
        if victims is not None and victims.pods:
            return [self._filter_after_eviction(pod, ni, victims) for ni in nodes.infos]
        view = nodes.copies.get(NAME) if nodes.copies else None
        if view is not None and view.victims:
            return self._filter_copies(pod, nodes, view)
        return self._filter_batch(pod, nodes)

    def pre_filter_copies(
        self,
        state: CycleState,
        pod_info: PodInfo,
        table: Any,
        rows: Sequence[int],
        pods: Sequence[Sequence[PodInfo]],
    ) -> VictimCopies:
        """The victims of copies of the nodes at ``rows``, so that preemption's dry run
        stays batched (see ``NodeBatch.copies``)."""
        return VictimCopies(rows, pods)

    def _filter_copies(
        self, pod: Pod, nodes: NodeBatch, view: VictimView
    ) -> Sequence[Status | None]:
        # The copies without victims as the nodes are; those with victims one by one,
        # on the snapshot's NodeInfo (Filter reads only the node and the NRT data).
        verdicts = self._filter_batch(pod, nodes)
        out = list(verdicts) if verdicts is not None else [None] * len(nodes)
        infos = nodes.table.info_array
        for i, row in enumerate(nodes.rows.tolist()):
            victims = view.victims.get(row)
            if victims is not None:
                out[i] = self._filter_after_eviction(pod, infos[row], victims)
        return out

    def _filter_batch(self, pod: Pod, nodes: NodeBatch) -> Sequence[Status | None] | None:
        shape = self._shape(pod)
        groups = self.cache.passthrough_groups(nodes.table)
        if groups is None:
            return self._filter_many(pod, nodes.infos)

        def code(topology: NodeTopology, reported: frozenset[str]) -> int:
            return self._reason_code(filter_reason(pod, topology.config, topology.numa, reported))

        codes = groups.verdicts(("filter", shape.key), nodes.take(groups.ids), code, 0, np.intp)
        if not codes.any():
            return None  # no node rejected
        return self._statuses[codes]

    def _reason_code(self, reason: str | None) -> int:
        # Verdicts are kept as small integers (0: passes) so that a batch is decided with
        # numpy; one Status per reason, shared by every node it rejects.
        if reason is None:
            return 0
        code = self._reason_codes.get(reason)
        if code is None:
            code = self._reason_codes[reason] = len(self._statuses)
            statuses = np.empty(code + 1, dtype=object)
            statuses[:code] = self._statuses
            statuses[code] = Status(Code.UNSCHEDULABLE, reason)
            self._statuses = statuses
        return code

    def _filter_many(self, pod: Pod, infos: Sequence[NodeInfo]) -> list[Status | None]:
        shape = self._shape(pod)
        out: list[Status | None] = []
        append = out.append
        if shape.skips_filter:
            for ni in infos:
                append(None if ni.node is not None else Status(Code.ERROR, "node not found"))
            return out
        key = ("filter", shape.key)
        # The hot loop of a large cluster: the verdict is remembered on the node's NUMA
        # data by pod shape, with the Node object it was computed against (Filter also
        # reads the resources the Node reports).
        for ni, (topology, fresh) in zip(infos, self.cache.get_many(infos), strict=True):
            node = ni.node
            if node is None:
                append(Status(Code.ERROR, "node not found"))
            elif not fresh:
                append(Status(Code.UNSCHEDULABLE, ERR_REASON_INVALID_TOPOLOGY))
            elif topology is None:
                append(None)
            else:
                memo = topology.memo
                hit = memo.get(key)
                if hit is not None and hit[0] is node:
                    reason = hit[1]
                else:
                    reason = filter_reason(pod, topology.config, topology.numa, node_resources(ni))
                    _remember(memo, key, node, reason)
                if reason is None:
                    append(None)
                else:
                    self.cache.rejected(ni.name)
                    append(Status(Code.UNSCHEDULABLE, reason))
        return out

    def _filter_after_eviction(
        self, pod: Pod, node_info: NodeInfo, victims: Victims
    ) -> Status | None:
        # Preemption's dry run: the node's zones with the victims' exclusive resources
        # given back where the agent's placement puts them. Verdicts are not remembered
        # (they depend on the victims) and a rejection does not mark the node for a
        # resync (the state is hypothetical) unless the placement is behind the pods.
        if self._shape(pod).skips_filter:
            return None if node_info.node is not None else Status(Code.ERROR, "node not found")
        topology, fresh = self.cache.get(node_info)
        if node_info.node is None:
            return Status(Code.ERROR, "node not found")
        if not fresh:
            return Status(Code.UNSCHEDULABLE, ERR_REASON_INVALID_TOPOLOGY)
        if topology is None:
            return None
        numa = topology.numa
        source = self.cache.source(node_info.name)
        placement = self.cache.placement(node_info)
        if source is not None and placement is not None and placement.containers:
            try:
                numa = numa_after_eviction(
                    topology.numa,
                    zone_allocatable(source),
                    victims.pods.values(),
                    placement,
                    nrt_resource_names(source),
                )
            except MissingNUMAMappingError:
                self.cache.rejected(node_info.name)
                return Status(Code.UNSCHEDULABLE, REASON_MISSING_NUMA_MAPPING)
            except EvictionSimulationError:
                pass  # nothing exclusive to give back, or inconsistent data: zones as they are
        reason = filter_reason(pod, topology.config, numa, node_resources(node_info))
        return None if reason is None else Status(Code.UNSCHEDULABLE, reason)

    def _score_topology(self, pod: Pod, topology: NodeTopology) -> int:
        conf = topology.config
        if self.strategy is None:
            if conf.scope == SCOPE_POD:
                return least_numa_pod_scope(pod, topology.numa)
            return least_numa_container_scope(pod, topology.numa)
        if conf.policy != POLICY_SINGLE_NUMA_NODE:
            return 0
        if conf.scope == SCOPE_POD:
            return pod_scope_score(pod, topology.numa, self.strategy, self.weights)
        return container_scope_score(pod, topology.numa, self.strategy, self.weights)

    def _score_many(self, pod: Pod, infos: Sequence[NodeInfo]) -> list[int]:
        shape = self._shape(pod)
        # Every node suits a pod the kubelet will not pin.
        if shape.qos != QOS_GUARANTEED:
            return [MAX_NODE_SCORE] * len(infos)
        key = ("score", shape.key)
        out: list[int] = []
        append = out.append
        for ni, (topology, fresh) in zip(infos, self.cache.get_many(infos), strict=True):
            if not fresh or topology is None:
                append(0)
                continue
            # A score reads only the NUMA data and the pod's shape.
            memo = topology.memo
            hit = memo.get(key)
            if hit is not None:
                append(hit[1])
                continue
            score = self._score_topology(pod, topology)
            _remember(memo, key, ni.node, score)
            append(score)
        return out

    @hookimpl
    def score(self, pod: Pod, node_info: NodeInfo) -> int:
        return self._score_many(pod, [node_info])[0]

    @hookimpl
    def score_nodes(self, pod: Pod, nodes: NodeBatch) -> Sequence[int]:
        shape = self._shape(pod)
        if shape.qos != QOS_GUARANTEED:
            return [MAX_NODE_SCORE] * len(nodes)
        groups = self.cache.passthrough_groups(nodes.table)
        if groups is None:
            return self._score_many(pod, nodes.infos)
        return groups.verdicts(
            ("score", shape.key),
            nodes.take(groups.ids),
            lambda topology, _reported: self._score_topology(pod, topology),
            0,
            np.int64,
        )

    @hookimpl
    def reserve(self, pod: Pod, pod_info: PodInfo, node_name: str) -> None:
        self.cache.reserve(node_name, pod, pod_info.uid)

    @hookimpl
    def unreserve(self, pod_info: PodInfo, node_name: str) -> None:
        self.cache.unreserve(node_name, pod_info.uid)

    @hookimpl
    def post_bind(self, pod_info: PodInfo, node_name: str) -> None:
        self.cache.bound(node_name, pod_info.uid)
