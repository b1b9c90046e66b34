"""NodeResourcesFit: does the node have room for the pod's requests; score by allocation.

Upstream ``fit.go`` (Kubernetes 1.35). Filter rejects a node when the pod would exceed
its pod count ("Too many pods") or when, for cpu, memory, ephemeral-storage or a scalar
resource (extended resources, hugepages), the pod requests more than the node's
allocatable minus what its pods already request ("Insufficient cpu", ...), reporting
every such resource. The status is ``UNSCHEDULABLE`` (preemption may help), or
``UNSCHEDULABLE_AND_UNRESOLVABLE`` when the pod requests more of some resource than the
node has at all. Score ranks feasible nodes with one of three strategies: LeastAllocated
(default), MostAllocated or RequestedToCapacityRatio. In a pod group's cycle (the
TopologyAwareWorkloadScheduling gate) PlacementScore ranks the placements that take the
group by MostAllocated over all their nodes, whatever the strategy (its resource weights
apply), as kube-scheduler v1.36 does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field, field_validator, model_validator

from kubesched import (
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
    PodGroupAssignments,
    PodInfo,
    QueueingHint,
    StateKey,
    Status,
    hookimpl,
    invalid,
    label_name_errors,
    not_supported,
    raise_args_errors,
    required,
    sat_sub_array,
)
from kubesched.api import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    Node,
    Pod,
    extended_resource_classes,
    is_dra_extended_resource_name,
    is_extended_resource_name,
    is_scalar_resource_name,
    pod_level_requests,
    pod_requests,
)
from kubesched_builtin import signers
from kubesched_builtin.names import NODE_RESOURCES_FIT

from .least_allocated import LeastAllocatedScorer
from .most_allocated import MostAllocatedScorer
from .requested_to_capacity_ratio import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    RequestedToCapacityRatioScorer,
)
from .resource_allocation import (
    AllocationScorer,
    ResourceAllocationScorer,
    ResourceSpec,
    default_resources,
    dra_capacity,
)

NAME = NODE_RESOURCES_FIT

POD_LEVEL_RESOURCES_GATE = "PodLevelResources"
"""The gate under which a pod's ``spec.resources`` requests count (beta, on by default in
v1.36); Filter and Score read it, as NodeResourcesBalancedAllocation does."""

ERR_REASON_TOO_MANY_PODS = "Too many pods"
ERR_REASON_INSUFFICIENT_CPU = "Insufficient cpu"
ERR_REASON_INSUFFICIENT_MEMORY = "Insufficient memory"
ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE = "Insufficient ephemeral-storage"
ERR_REASON_INSUFFICIENT_FMT = "Insufficient {}"
"""For scalar resources: ``Insufficient nvidia.com/gpu``."""

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)


# ---------------------------------------------------------------------------------------
# NodeResourcesFitArgs
# ---------------------------------------------------------------------------------------


class UtilizationShapePoint(ArgsModel):
    """A point of the RequestedToCapacityRatio shape."""

    utilization: int = Field(description="Utilization in percent, 0..100 (x axis).")
    score: int = Field(description="Score at that utilization, 0..10 (scaled x10 to 0..100).")


class RequestedToCapacityRatioParam(ArgsModel):
    """``requestedToCapacityRatio``: the shape of the scoring function."""

    shape: tuple[UtilizationShapePoint, ...] = Field(
        default=(),
        description="Points in strictly increasing utilization; at least one.",
    )


class ScoringStrategy(ArgsModel):
    """``scoringStrategy``: which strategy scores nodes, over which resources."""

    type: str = Field(
        default="",
        description="LeastAllocated, MostAllocated or RequestedToCapacityRatio (required).",
    )
    resources: tuple[ResourceSpec, ...] = Field(
        default=(),
        validate_default=True,
        description="Resources scored and their weights (1..100); default cpu:1, memory:1.",
    )
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = Field(
        default=None, description="The shape, for type RequestedToCapacityRatio."
    )

    @field_validator("resources", mode="after")
    @classmethod
    def _default_resources(cls, value: tuple[ResourceSpec, ...]) -> tuple[ResourceSpec, ...]:
        # SetDefaults_NodeResourcesFitArgs: no resources means cpu and memory.
        return value or default_resources()


def _default_scoring_strategy() -> ScoringStrategy:
    return ScoringStrategy(type=LEAST_ALLOCATED)


class NodeResourcesFitArgs(PluginArgs):
    """``NodeResourcesFitArgs``."""

    ignored_resources: tuple[str, ...] = Field(
        default=(),
        description="Extended resources Filter does not check (e.g. example.com/foo).",
    )
    ignored_resource_groups: tuple[str, ...] = Field(
        default=(),
        description=(
            "Prefixes of extended resources Filter does not check: example.com ignores "
            "example.com/foo and example.com/bar."
        ),
    )
    scoring_strategy: ScoringStrategy = Field(
        default_factory=_default_scoring_strategy,
        description="How Score ranks nodes; default LeastAllocated over cpu:1, memory:1.",
    )

    @model_validator(mode="after")
    def _validate(self) -> NodeResourcesFitArgs:
        # ValidateNodeResourcesFitArgs, in upstream's order.
        errors: list[ArgsError] = []
        for i, res in enumerate(self.ignored_resources):
            errors += label_name_errors(("ignoredResources", i), res)
        for i, group in enumerate(self.ignored_resource_groups):
            if "/" in group:
                errors.append(
                    invalid(
                        ("ignoredResourceGroups", i), group, "resource group name can't contain '/'"
                    )
                )
            errors += label_name_errors(("ignoredResourceGroups", i), group)
        strategy = self.scoring_strategy
        if strategy.type not in SCORING_STRATEGY_TYPES:
            errors.append(
                not_supported(
                    ("scoringStrategy", "type"), strategy.type, sorted(SCORING_STRATEGY_TYPES)
                )
            )
        for i, r in enumerate(strategy.resources):
            if r.weight <= 0 or r.weight > 100:
                errors.append(
                    invalid(
                        ("scoringStrategy", "resources", i, "weight"),
                        r.weight,
                        f"resource weight of {r.name} not in valid range (0, 100]",
                    )
                )
        param = strategy.requested_to_capacity_ratio
        if param is not None:
            errors += shape_errors(
                param.shape, ("scoringStrategy", "requestedToCapacityRatio", "shape")
            )
        elif strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            # Upstream's NewFit dereferences the missing param and panics; say why instead.
            errors.append(required(("scoringStrategy", "requestedToCapacityRatio")))
        raise_args_errors("NodeResourcesFitArgs", errors)
        return self


def shape_errors(
    shape: Sequence[UtilizationShapePoint], loc: tuple[str | int, ...]
) -> list[ArgsError]:
    # validateFunctionShape.
    if not shape:
        return [required(loc, "at least one point must be specified")]
    errors: list[ArgsError] = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errors.append(
                invalid(
                    (*loc, i, "utilization"),
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= MAX_UTILIZATION:
            errors.append(
                invalid(
                    (*loc, i, "utilization"),
                    point.utilization,
                    f"not in valid range [0, {MAX_UTILIZATION}]",
                )
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(
                invalid(
                    (*loc, i, "score"),
                    point.score,
                    f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
                )
            )
    return errors


def build_scorer(strategy: ScoringStrategy) -> AllocationScorer:
    """The strategy object for validated ``scoringStrategy`` args."""
    weights = [r.weight for r in strategy.resources]
    if strategy.type == MOST_ALLOCATED:
        return MostAllocatedScorer(weights)
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        assert strategy.requested_to_capacity_ratio is not None  # validated
        shape = [(p.utilization, p.score) for p in strategy.requested_to_capacity_ratio.shape]
        return RequestedToCapacityRatioScorer(weights, shape)
    return LeastAllocatedScorer(weights)


# ---------------------------------------------------------------------------------------
# The pod's request and the fit check
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodResourceRequest:
    """What Filter checks: the pod's cpu (millicores), memory, ephemeral-storage and
    scalar requests (upstream's ``preFilterState``, a ``framework.Resource``).

    ``scalars`` holds only scalar resource names (extended resources, hugepages,
    attachable volumes), sorted by name, zero requests included; other names a pod may
    request (``pods``, unknown native names) are not checked, as upstream's
    ``SetMaxResource`` drops them.
    """

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    scalars: tuple[tuple[str, int], ...] = ()

    @classmethod
    def from_requests(cls, requests: Mapping[str, int]) -> PodResourceRequest:
        """From a ``pod_requests`` mapping (``PodInfo.requests``)."""
        return cls(
            milli_cpu=requests.get(CPU, 0),
            memory=requests.get(MEMORY, 0),
            ephemeral_storage=requests.get(EPHEMERAL_STORAGE, 0),
            scalars=tuple(
                sorted((k, v) for k, v in requests.items() if is_scalar_resource_name(k))
            ),
        )

    def is_zero(self) -> bool:
        """True when the pod requests nothing Filter checks besides a pod slot."""
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or self.scalars)


@dataclass(frozen=True)
class InsufficientResource:
    """A resource the node lacks for the pod (upstream ``InsufficientResource``).

    ``unresolvable`` is true when the pod requests more than the node's whole
    allocatable, so evicting pods cannot help.
    """

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False


def _ignored(name: str, ignored: frozenset[str], groups: frozenset[str]) -> bool:
    if not is_extended_resource_name(name):
        return False
    return name in ignored or (bool(groups) and name.split("/", 1)[0] in groups)


def checked_scalars(
    request: PodResourceRequest,
    ignored_resources: Iterable[str] = (),
    ignored_resource_groups: Iterable[str] = (),
) -> list[tuple[str, int]]:
    """The pod's non-zero scalar requests that Filter checks, in order."""
    ignored = frozenset(ignored_resources)
    groups = frozenset(ignored_resource_groups)
    return [(k, v) for k, v in request.scalars if v != 0 and not _ignored(k, ignored, groups)]


def _check(
    out: list[InsufficientResource], name: str, reason: str, want: int, have: int, total: int
) -> None:
    """Append what the node lacks of one base resource, if anything."""
    if want > 0 and want > total - have:
        out.append(InsufficientResource(name, reason, want, have, total, want > total))


def fits_request(
    request: PodResourceRequest,
    node_info: NodeInfo,
    ignored_resources: Iterable[str] = (),
    ignored_resource_groups: Iterable[str] = (),
    dra_backed: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """Every resource ``node_info`` lacks for ``request`` (upstream ``fitsRequest``).

    Order: the pod count, cpu, memory, ephemeral-storage, then scalar resources by
    name (upstream iterates a Go map there, in random order). An extended resource in
    ``dra_backed`` that the node does not offer is left to DynamicResources.
    """
    out: list[InsufficientResource] = []
    alloc, used = node_info.allocatable, node_info.requested
    pods = len(node_info.pods)
    if pods + 1 > alloc.allowed_pod_number:
        out.append(
            InsufficientResource(
                "pods", ERR_REASON_TOO_MANY_PODS, 1, pods, alloc.allowed_pod_number
            )
        )
    if request.is_zero():
        return out
    _check(
        out, CPU, ERR_REASON_INSUFFICIENT_CPU, request.milli_cpu, used.milli_cpu, alloc.milli_cpu
    )
    _check(out, MEMORY, ERR_REASON_INSUFFICIENT_MEMORY, request.memory, used.memory, alloc.memory)
    _check(
        out,
        EPHEMERAL_STORAGE,
        ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
        request.ephemeral_storage,
        used.ephemeral_storage,
        alloc.ephemeral_storage,
    )
    if not request.scalars:
        return out
    for name, want in checked_scalars(request, ignored_resources, ignored_resource_groups):
        total = alloc.scalar_resources.get(name, 0)
        have = used.scalar_resources.get(name, 0)
        if total == 0 and name in dra_backed:
            continue
        if want > total - have:
            out.append(
                InsufficientResource(
                    name, ERR_REASON_INSUFFICIENT_FMT.format(name), want, have, total, want > total
                )
            )
    return out


def fits(pod: Pod, node_info: NodeInfo) -> list[InsufficientResource]:
    """Upstream ``Fits``: what ``node_info`` lacks for ``pod``, nothing ignored."""
    return fits_request(PodResourceRequest.from_requests(pod_requests(pod)), node_info)


def _status(insufficient: Sequence[InsufficientResource]) -> Status:
    code = (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        if any(r.unresolvable for r in insufficient)
        else Code.UNSCHEDULABLE
    )
    return Status(code, *(r.reason for r in insufficient))


# ---------------------------------------------------------------------------------------
# Queueing hints
# ---------------------------------------------------------------------------------------


def is_schedulable_after_pod_event(
    pod: Pod, old_obj: Pod | None, new_obj: Pod | None
) -> QueueingHint:
    """Pod deleted or scaled down (upstream ``isSchedulableAfterPodEvent``).

    A deleted pod frees resources only if it was bound or nominated to a node. A
    scale-down helps if it is the rejected pod itself, or a bound pod whose request of a
    resource the rejected pod needs went down.
    """
    if new_obj is None:
        assert old_obj is not None
        if not old_obj.spec.node_name and not old_obj.status.nominated_node_name:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE
    if old_obj is None:
        return QueueingHint.SKIP
    if new_obj.metadata.uid == pod.metadata.uid:
        return QueueingHint.QUEUE
    if not new_obj.spec.node_name:
        return QueueingHint.SKIP
    before = PodResourceRequest.from_requests(pod_requests(old_obj))
    after = PodResourceRequest.from_requests(pod_requests(new_obj))
    before_scalars, after_scalars = dict(before.scalars), dict(after.scalars)
    for name, value in pod_requests(pod).items():
        if value == 0:
            continue
        if name == CPU:
            shrunk = before.milli_cpu > after.milli_cpu
        elif name == MEMORY:
            shrunk = before.memory > after.memory
        elif name == EPHEMERAL_STORAGE:
            shrunk = before.ephemeral_storage > after.ephemeral_storage
        else:
            shrunk = is_scalar_resource_name(name) and before_scalars.get(
                name, 0
            ) > after_scalars.get(name, 0)
        if shrunk:
            return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _any_requested_resource_increased(pod: Pod, old: Node, new: Node) -> bool:
    request = PodResourceRequest.from_requests(pod_requests(pod))
    before, after = NodeInfo(old).allocatable, NodeInfo(new).allocatable
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    if request.is_zero():
        return False
    if (
        (request.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
        or (request.memory > 0 and after.memory > before.memory)
        or (request.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)
    ):
        return True
    return any(
        q != 0 and after.scalar_resources.get(k, 0) > before.scalar_resources.get(k, 0)
        for k, q in request.scalars
    )


def is_schedulable_after_node_change(
    pod: Pod, old_obj: Node | None, new_obj: Node | None
) -> QueueingHint:
    """Node added or its allocatable changed (upstream ``isSchedulableAfterNodeChange``).

    Queue when the pod would fit the (empty) node, and it is new or one of the resources
    the pod requests (or the pod count) grew.
    """
    # isFit: the pod must fit the node with no pods on it.
    if new_obj is None or len(fits(pod, NodeInfo(new_obj))) != 0:
        return QueueingHint.SKIP
    if old_obj is None:
        return QueueingHint.QUEUE
    if not _any_requested_resource_increased(pod, old_obj, new_obj):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


# ---------------------------------------------------------------------------------------
# The plugin
# ---------------------------------------------------------------------------------------

PRE_FILTER_KEY: StateKey[PodResourceRequest] = StateKey("PreFilter" + NAME)
DRA_BACKED_KEY: StateKey[frozenset[str]] = StateKey("PreFilter" + NAME + "/DRA")
"""The pod's extended resources that a DeviceClass backs (DRAExtendedResource)."""
"""The pod's request, written at PreFilter for Filter."""
PRE_SCORE_KEY: StateKey[tuple[int, ...]] = StateKey("PreScore" + NAME)
"""The pod's (non-zero) request of each scored resource, written at PreScore."""

_MAX_BATCH_CHECKS = 62
"""Filter checks encoded as bits of an int64 per node in ``filter_nodes``."""


class NodeResourcesFit:
    """Filters nodes without room for the pod's requests; scores nodes, and a pod group's
    placements, by resource allocation."""

    name = NAME
    Args = NodeResourcesFitArgs

    def __init__(self, args: NodeResourcesFitArgs | None, handle: Any) -> None:
        args = args or NodeResourcesFitArgs()
        self._handle = handle
        # DRAExtendedResource (beta, on by default): extended resources a DeviceClass backs.
        self._dra_extended = handle.feature_enabled("DRAExtendedResource")
        self.ignored_resources = frozenset(args.ignored_resources)
        self.ignored_resource_groups = frozenset(args.ignored_resource_groups)
        # PodLevelResources (beta, on by default in v1.36): the pod's spec.resources
        # requests replace its containers' sum, in Filter and in Score.
        self.pod_level = handle.feature_enabled(POD_LEVEL_RESOURCES_GATE)
        strategy = args.scoring_strategy
        self.scorer = ResourceAllocationScorer(
            strategy.type,
            strategy.resources,
            build_scorer(strategy),
            use_requested=False,
            pod_level=self.pod_level,
            dra=dra_capacity(handle),
        )
        # Placements are always scored for bin packing; only the resources and their
        # weights come from the configured strategy (upstream's docs say so explicitly).
        # Upstream's placement scorer counts the group's pods without their pod-level
        # requests and the nodes without their DRA devices, whatever the gates: it is
        # built apart from the plugin's feature flags and given no DRA state.
        # kube-scheduler v1.36.2 places the recorded cases "pod-level-requests-count" and
        # "dra-backed-extended-resource" (tests/pod_group_scenarios.py) so.
        self.placement_scorer = ResourceAllocationScorer(
            MOST_ALLOCATED,
            strategy.resources,
            MostAllocatedScorer([r.weight for r in strategy.resources]),
            use_requested=False,
            pod_level=False,
        )

    @hookimpl
    def sign_pod(self, pod_info: PodInfo) -> list[tuple[str, Any]] | Status:
        """Feasibility and score follow the pod's requests and overhead."""
        return signers.resources(pod_info, self._handle)

    # -- registration -------------------------------------------------------------------
    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # With queueing hints on (upstream's default), Node updates other than
        # allocatable are not needed; InPlacePodVerticalScaling (GA) adds scale-downs.
        pod_actions = ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, pod_actions), is_schedulable_after_pod_event
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, node_actions), is_schedulable_after_node_change
            ),
        ]

    # -- filter -------------------------------------------------------------------------
    @hookimpl
    def pre_filter(self, state: CycleState, pod_info: PodInfo) -> None:
        requests = pod_info.requests
        if not self.pod_level and pod_level_requests(pod_info.pod):
            requests = pod_requests(pod_info.pod, pod_level=False)
        request = PodResourceRequest.from_requests(requests)
        state.write(PRE_FILTER_KEY, request)
        lister = getattr(self._handle, "lister", None)
        if self._dra_extended and lister is not None:
            extended = [n for n, _ in request.scalars if is_dra_extended_resource_name(n)]
            if extended:
                # Resources a DeviceClass backs: DynamicResources allocates them on nodes
                # that do not offer them themselves.
                backed = extended_resource_classes(lister.list_objects("DeviceClass"))
                state.write(DRA_BACKED_KEY, frozenset(n for n in extended if n in backed))

    def _pre_filter_state(self, state: CycleState) -> PodResourceRequest | Status:
        request = state.get(PRE_FILTER_KEY)
        if request is None:
            return Status(
                Code.ERROR,
                f'error reading "{PRE_FILTER_KEY.name}" from cycleState: not found',
            )
        return request

    @hookimpl
    def filter(self, state: CycleState, node_info: NodeInfo) -> Status | None:
        request = self._pre_filter_state(state)
        if isinstance(request, Status):
            return request
        insufficient = fits_request(
            request,
            node_info,
            self.ignored_resources,
            self.ignored_resource_groups,
            state.get(DRA_BACKED_KEY) or frozenset(),
        )
        return _status(insufficient) if insufficient else None

    @hookimpl
    def filter_nodes(self, state: CycleState, nodes: NodeBatch) -> Sequence[Status | None] | None:
        request = self._pre_filter_state(state)
        if isinstance(request, Status):
            return [request] * len(nodes)
        table, rows = nodes.table, nodes.rows
        n = len(rows)
        # (reason, fails, (request, allocatable) or None) per check, in fits_request's
        # order; a failure is unresolvable where the request exceeds the allocatable,
        # worked out only when some node fails.
        checks: list[tuple[str, np.ndarray, tuple[int, np.ndarray] | None]] = [
            (
                ERR_REASON_TOO_MANY_PODS,
                nodes.take(table.requested["pods"]) + 1 > nodes.take(table.allocatable["pods"]),
                None,
            )
        ]
        if not request.is_zero():
            zeros = np.zeros(n, dtype=np.int64)

            def column(columns: dict[str, np.ndarray], name: str) -> np.ndarray:
                col = columns.get(name)
                return zeros if col is None else nodes.take(col)

            wanted = [
                (ERR_REASON_INSUFFICIENT_CPU, CPU, request.milli_cpu),
                (ERR_REASON_INSUFFICIENT_MEMORY, MEMORY, request.memory),
                (
                    ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
                    EPHEMERAL_STORAGE,
                    request.ephemeral_storage,
                ),
            ]
            wanted += [
                (ERR_REASON_INSUFFICIENT_FMT.format(name), name, q)
                for name, q in checked_scalars(
                    request, self.ignored_resources, self.ignored_resource_groups
                )
            ]
            dra_backed = state.get(DRA_BACKED_KEY) or frozenset()
            for reason, name, want in wanted:
                if want <= 0:
                    continue
                total = column(table.allocatable, name)
                have = column(table.requested, name)
                fails = want > sat_sub_array(total, have)
                if name in dra_backed:
                    fails &= total != 0
                checks.append((reason, fails, (want, total)))
        if not any(fails.any() for _, fails, _ in checks):
            return None  # every node fits (the usual answer)
        if len(checks) > _MAX_BATCH_CHECKS:
            # More checks than bits: decide node by node (never seen in practice).
            return [self.filter(state, ni) for ni in nodes.infos]
        code = np.zeros(n, dtype=np.int64)
        unresolvable = np.zeros(n, dtype=bool)
        for bit, (_, fails, unres) in enumerate(checks):
            code |= fails.astype(np.int64) << bit
            if unres is not None:
                want, total = unres
                unresolvable |= fails & (want > total)
        # The last bit says "unresolvable", so one shared Status per distinct verdict.
        code |= unresolvable.astype(np.int64) << len(checks)
        out = np.full(n, None, dtype=object)
        for value in np.unique(code[code != 0]).tolist():
            reasons = [reason for bit, (reason, _, _) in enumerate(checks) if value >> bit & 1]
            status_code = (
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                if value >> len(checks) & 1
                else Code.UNSCHEDULABLE
            )
            out[code == value] = Status(status_code, *reasons)
        return out

    # -- score --------------------------------------------------------------------------
    @hookimpl
    def pre_score(self, state: CycleState, pod_info: PodInfo) -> None:
        state.write(PRE_SCORE_KEY, self.scorer.pod_requests(pod_info))

    def _score_requests(self, state: CycleState, pod_info: PodInfo) -> tuple[int, ...]:
        requests = state.get(PRE_SCORE_KEY)
        return self.scorer.pod_requests(pod_info) if requests is None else requests

    @hookimpl
    def score(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> int:
        return self.scorer.score(node_info, self._score_requests(state, pod_info))

    @hookimpl
    def score_nodes(self, state: CycleState, pod_info: PodInfo, nodes: NodeBatch) -> np.ndarray:
        return self.scorer.score_nodes(nodes, self._score_requests(state, pod_info))

    # -- placement score (pod group cycle) ----------------------------------------------
    @hookimpl
    def score_placement(self, assignments: PodGroupAssignments) -> int:
        """MostAllocated over the placement's nodes with the group's placed pods on them;
        no normalisation, the score is on 0..100 already."""
        snapshot = self._handle.snapshot
        group_requests = [0] * len(self.placement_scorer.resources)
        for pod, node_name in assignments.assignments:
            try:
                snapshot.get(node_name)
            except KeyError:
                # Upstream logs and skips a pod whose node left the snapshot meanwhile.
                continue
            requests = self.placement_scorer.pod_requests(PodInfo(pod))
            group_requests = [a + b for a, b in zip(group_requests, requests, strict=True)]
        return self.placement_scorer.score_placement(assignments.placement.nodes, group_requests)


__all__ = [
    "ERR_REASON_INSUFFICIENT_CPU",
    "ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE",
    "ERR_REASON_INSUFFICIENT_FMT",
    "ERR_REASON_INSUFFICIENT_MEMORY",
    "ERR_REASON_TOO_MANY_PODS",
    "NAME",
    "POD_LEVEL_RESOURCES_GATE",
    "PRE_FILTER_KEY",
    "PRE_SCORE_KEY",
    "InsufficientResource",
    "NodeResourcesFit",
    "NodeResourcesFitArgs",
    "PodResourceRequest",
    "ScoringStrategy",
    "checked_scalars",
    "fits",
    "fits_request",
    "is_schedulable_after_node_change",
    "is_schedulable_after_pod_event",
]
