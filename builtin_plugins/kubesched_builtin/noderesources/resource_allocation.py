"""Resource-allocation scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation.

Upstream's ``resource_allocation.go`` (``resourceAllocationScorer``). For each configured
resource it derives, per node, the allocatable amount and the amount requested once the
pod is added, and hands both lists to a strategy (:class:`AllocationScorer`): Least /
Most allocated, RequestedToCapacityRatio, or balanced allocation.

Every strategy has two forms that must agree exactly: ``score`` on one node's lists
(Python ints and floats) and ``score_columns`` on ``(resources, nodes)`` numpy arrays.
Both reproduce upstream's int64/float64 arithmetic: Go's integer division truncates
toward zero (``kubesched.go_div``), ``math.Round`` rounds halves away from zero
(``kubesched.go_round``), and ``float64(a) / float64(b)`` converts before dividing.
Where Go's int64 would overflow (amounts near the int64 maximum), sums saturate and
products are exact (``kubesched.sat_add_array``, ``kubesched.mul_div_array``), so a
score stays on 0..100 and an amount too large to count never wraps into a small one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np
from pydantic import Field, field_validator

from kubesched import (
    ArgsModel,
    NodeBatch,
    NodeInfo,
    NodeTable,
    PodInfo,
    go_div_array,
    sat_add_array,
    saturate,
)
from kubesched.api import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    is_scalar_resource_name,
    pod_level_requests,
    pod_requests,
    pod_scoring_requests,
)
from kubesched_builtin.dynamicresources.capacity import ExtendedResourceCapacity

__all__ = [
    "AllocationScorer",
    "ResourceAllocationScorer",
    "ResourceSpec",
    "default_resources",
    "dra_capacity",
]


# ---------------------------------------------------------------------------------------
# Args pieces shared by both plugins
# ---------------------------------------------------------------------------------------


class ResourceSpec(ArgsModel):
    """A resource to score and its weight (upstream ``config.ResourceSpec``)."""

    name: str = Field(description="Resource name: cpu, memory, ephemeral-storage or a scalar one.")
    weight: int = Field(
        default=1,
        description="Weight of the resource in the weighted average; unset or 0 means 1.",
    )

    @field_validator("weight", mode="before")
    @classmethod
    def _default_weight(cls, value: object) -> object:
        # SetDefaults_NodeResources*Args: "If the weight is not set or it is explicitly
        # set to 0, then apply the default weight(1) instead."
        return 1 if value == 0 else value


def default_resources() -> tuple[ResourceSpec, ...]:
    """Upstream's ``defaultResourceSpec``: cpu and memory, weight 1 each."""
    return (ResourceSpec(name=CPU, weight=1), ResourceSpec(name=MEMORY, weight=1))


# ---------------------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------------------


class AllocationScorer(Protocol):
    """A scoring strategy (upstream's ``scorer func(requested, allocable []int64) int64``).

    ``requested[i]`` / ``allocatable[i]`` belong to the i-th configured resource; an
    allocatable of 0 means "not scored on this node" (the resource is absent, or it is a
    scalar resource the pod does not request) and must be skipped.
    """

    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        """One node's score."""
        ...

    def score_columns(self, requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
        """Scores of many nodes: int64 arrays of shape ``(resources, nodes)`` in, int64 out."""
        ...


class WeightedAverageScorer(ABC):
    """The shape LeastAllocated and MostAllocated share upstream: a score on 0..100 per
    resource, averaged with the resources' weights over the resources the node has
    (allocatable > 0), all in int64 arithmetic. Subclasses give the per-resource score,
    once, over numpy arrays; a single node is scored as a batch of one, so both paths
    agree to the unit, also where the amounts are near the int64 maximum."""

    def __init__(self, weights: Sequence[int]) -> None:
        self.weights = tuple(weights)
        self._positive = all(w > 0 for w in self.weights)

    @abstractmethod
    def resource_score_columns(self, requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """One resource's score on 0..100 for many nodes; ``capacity`` > 0 everywhere."""

    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        """One node's score."""
        return int(
            self.score_columns(
                np.array(requested, dtype=np.int64).reshape(-1, 1),
                np.array(allocatable, dtype=np.int64).reshape(-1, 1),
            )[0]
        )

    def score_columns(self, requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
        """Scores of many nodes: int64 arrays of shape ``(resources, nodes)`` in, int64 out."""
        n = requested.shape[1]
        node_score = np.zeros(n, dtype=np.int64)
        if allocatable.all():
            # Every node has every resource (the usual case): one weight sum for all.
            for weight, req, alloc in zip(self.weights, requested, allocatable, strict=True):
                score = self.resource_score_columns(req, alloc)
                node_score += score if weight == 1 else score * weight
            total = sum(self.weights)
            if total == 0:
                return node_score * 0
            if self._positive:
                # Resource scores are 0..100 and the weights positive (as validated): a
                # non-negative numerator, where Go's truncating division is the floor.
                return node_score // total
            return go_div_array(node_score, np.full(n, total, dtype=np.int64))
        weight_sum = np.zeros(n, dtype=np.int64)
        for weight, req, alloc in zip(self.weights, requested, allocatable, strict=True):
            present = alloc != 0
            s = self.resource_score_columns(req, np.where(present, alloc, 1))
            node_score += np.where(present, s, 0) * weight
            weight_sum += np.where(present, weight, 0)
        return np.where(
            weight_sum != 0, go_div_array(node_score, np.where(weight_sum != 0, weight_sum, 1)), 0
        )


# How each configured resource is read from a node (calculateResourceAllocatableRequest).
_CPU, _MEMORY, _EPHEMERAL, _SCALAR, _UNSCORED = range(5)


def _kind(name: str) -> int:
    if name == CPU:
        return _CPU
    if name == MEMORY:
        return _MEMORY
    if name == EPHEMERAL_STORAGE:
        return _EPHEMERAL
    # Upstream's NodeInfo keeps only scalar resources besides cpu, memory and
    # ephemeral-storage (and the pod count, which is no ResourceName it looks up here),
    # so any other name is never found on a node and never scored.
    return _SCALAR if is_scalar_resource_name(name) else _UNSCORED


def _has_zero(table: NodeTable, name: str) -> bool:
    """Whether some node of ``table`` has allocatable 0 of resource ``name``; cached
    with the table's other Node-derived values (allocatable changes only with them)."""
    column = table.allocatable[name]
    cached_column, has_zero = table.derived(
        ("NodeResources/zero-allocatable", name), lambda t: (column, not column.all())
    )
    # A table that gained the (all-zero) column after the check: check again.
    return has_zero if cached_column is column else not column.all()


def dra_capacity(handle: Any) -> Callable[[Any, str], tuple[int, int]] | None:
    """How scorers count extended resources backed by DRA on nodes that do not offer them
    (DRAExtendedResource, on by default); None with the gate off or no cluster to read."""
    lister = getattr(handle, "lister", None)
    if lister is None or not handle.feature_enabled("DRAExtendedResource"):
        return None
    return ExtendedResourceCapacity(lister)


class ResourceAllocationScorer:
    """Upstream's ``resourceAllocationScorer``: requests and allocatables per resource.

    ``use_requested`` picks the node's ``requested`` totals for cpu and memory (and the
    pod's own requests as they are) instead of the non-zero ones scoring normally uses
    (100m cpu / 200Mi memory for containers that request nothing): BalancedAllocation
    sets it, Fit's strategies do not. ``pod_level``: whether the pod's own
    ``spec.resources`` requests count (the PodLevelResources gate).
    """

    __slots__ = ("_kinds", "dra", "name", "pod_level", "resources", "scorer", "use_requested")

    def __init__(
        self,
        name: str,
        resources: Sequence[ResourceSpec],
        scorer: AllocationScorer,
        *,
        use_requested: bool,
        pod_level: bool = True,
        dra: Callable[[Any, str], tuple[int, int]] | None = None,
    ) -> None:
        self.name = name
        self.resources = tuple(resources)
        self.scorer = scorer
        self.use_requested = use_requested
        self.pod_level = pod_level
        self._kinds = tuple(_kind(r.name) for r in self.resources)
        # Only a scored extended resource can be backed by DRA: none, no per-node work.
        self.dra = dra if _SCALAR in self._kinds else None

    # -- the pod --------------------------------------------------------------------------
    def pod_requests(self, pod_info: PodInfo) -> tuple[int, ...]:
        """``calculatePodResourceRequestList``: the pod's request of each resource.

        Without ``use_requested``, cpu and memory are the non-zero requests
        (``NonMissingContainerRequests``); everything else is the plain request
        (containers, init containers, sidecars and overhead, via ``PodInfo.requests``).
        A pod with pod-level requests is counted from its spec: its containers' defaults
        apply before the pod-level requests replace their sum, and with the gate off the
        pod-level requests do not count at all.
        """
        pod = pod_info.pod
        if pod_level_requests(pod):
            requests = (
                pod_requests(pod, pod_level=self.pod_level)
                if self.use_requested
                else pod_scoring_requests(pod, pod_level=self.pod_level)
            )
            return tuple(requests.get(r.name, 0) for r in self.resources)
        out = []
        for r, kind in zip(self.resources, self._kinds, strict=True):
            if not self.use_requested and kind == _CPU:
                out.append(pod_info.non_zero_cpu)
            elif not self.use_requested and kind == _MEMORY:
                out.append(pod_info.non_zero_memory)
            else:
                out.append(pod_info.requests.get(r.name, 0))
        return tuple(out)

    # -- one node -------------------------------------------------------------------------
    def _allocatable_allocated(self, ni: NodeInfo, i: int, pod_request: int) -> tuple[int, int]:
        """The node's allocatable amount of the i-th resource and what its pods already
        request of it (exact); ``(0, 0)`` where the resource is not scored on the node."""
        kind = self._kinds[i]
        if kind == _SCALAR:
            # A scalar resource the pod does not request is not scored at all.
            if pod_request == 0:
                return 0, 0
            name = self.resources[i].name
            alloc = ni.allocatable.scalar_resources.get(name)
            if not alloc and self.dra is not None:
                # Not offered by the node itself: its devices of the DeviceClass backing
                # the resource count (DRAExtendedResource).
                devices, allocated = self.dra(ni.node, name)
                if devices > 0:
                    return devices, allocated
            if alloc is None:
                return 0, 0
            return saturate(alloc), ni.requested.scalar_resources.get(name, 0)
        requested = ni.requested if self.use_requested else ni.non_zero_requested
        if kind == _CPU:
            return saturate(ni.allocatable.milli_cpu), requested.milli_cpu
        if kind == _MEMORY:
            return saturate(ni.allocatable.memory), requested.memory
        if kind == _EPHEMERAL:
            # Upstream reads Requested here even when scoring with NonZeroRequested.
            return saturate(ni.allocatable.ephemeral_storage), ni.requested.ephemeral_storage
        return 0, 0

    def _allocatable_requested(self, ni: NodeInfo, i: int, pod_request: int) -> tuple[int, int]:
        alloc, allocated = self._allocatable_allocated(ni, i, pod_request)
        # Saturated as the node table's columns are (the NodeInfo's totals are exact).
        return alloc, saturate(allocated + pod_request)

    def node_lists(
        self, node_info: NodeInfo, pod_requests: Sequence[int]
    ) -> tuple[list[int], list[int]]:
        """``(requested, allocatable)`` of one node; both 0 where not scored."""
        requested = [0] * len(self.resources)
        allocatable = [0] * len(self.resources)
        for i, pod_request in enumerate(pod_requests):
            alloc, req = self._allocatable_requested(node_info, i, pod_request)
            # "Only fill the extended resource entry when it's non-zero."
            if alloc == 0:
                continue
            allocatable[i] = alloc
            requested[i] = req
        return requested, allocatable

    def score(self, node_info: NodeInfo, pod_requests: Sequence[int]) -> int:
        """The strategy's score of one node."""
        requested, allocatable = self.node_lists(node_info, pod_requests)
        return self.scorer.score(requested, allocatable)

    # -- a placement ----------------------------------------------------------------------
    def score_placement(self, nodes: Iterable[NodeInfo], group_requests: Sequence[int]) -> int:
        """The strategy's score of a placement: its ``nodes`` taken as one node, whose
        allocatable is theirs summed and whose requests are their pods' plus
        ``group_requests`` (the pod group's pods placed there, summed by
        :meth:`pod_requests`). A scalar resource the group does not request is not scored."""
        requested = list(group_requests)
        allocatable = [0] * len(requested)
        for ni in nodes:
            for i, group_request in enumerate(group_requests):
                alloc, allocated = self._allocatable_allocated(ni, i, group_request)
                allocatable[i] = saturate(allocatable[i] + alloc)
                requested[i] = saturate(requested[i] + allocated)
        return self.scorer.score(requested, allocatable)

    # -- many nodes -----------------------------------------------------------------------
    def node_columns(
        self, nodes: NodeBatch, pod_requests: Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(requested, allocatable)`` int64 arrays of shape ``(resources, nodes)``."""
        table, rows = nodes.table, nodes.rows
        n = len(rows)
        requested = np.zeros((len(self.resources), n), dtype=np.int64)
        allocatable = np.zeros((len(self.resources), n), dtype=np.int64)
        for i, (r, kind, pod_request) in enumerate(
            zip(self.resources, self._kinds, pod_requests, strict=True)
        ):
            if kind == _UNSCORED or (kind == _SCALAR and pod_request == 0):
                continue
            if kind == _SCALAR and self.dra is not None:
                # Devices backing the resource are counted node by node.
                pairs = [self._allocatable_requested(ni, i, pod_request) for ni in nodes.infos]
                allocatable[i] = [a for a, _ in pairs]
                requested[i] = [q if a else 0 for a, q in pairs]
                continue
            if kind == _SCALAR:
                alloc_col = table.allocatable.get(r.name)
                if alloc_col is None:
                    continue
                req_col = table.requested.get(r.name)
                alloc = nodes.take(alloc_col)
                req = (
                    sat_add_array(nodes.take(req_col), pod_request)
                    if req_col is not None
                    else np.full(n, pod_request, dtype=np.int64)
                )
            elif kind == _CPU:
                alloc = nodes.take(table.allocatable[CPU])
                base = table.requested[CPU] if self.use_requested else table.non_zero_cpu
                req = sat_add_array(nodes.take(base), pod_request)
            elif kind == _MEMORY:
                alloc = nodes.take(table.allocatable[MEMORY])
                base = table.requested[MEMORY] if self.use_requested else table.non_zero_memory
                req = sat_add_array(nodes.take(base), pod_request)
            else:
                alloc = nodes.take(table.allocatable[EPHEMERAL_STORAGE])
                req = sat_add_array(nodes.take(table.requested[EPHEMERAL_STORAGE]), pod_request)
            allocatable[i] = alloc
            # Nodes that do not have the resource request none of it: masked only when
            # some node's allocatable is 0 (rare: the check is cached per Node objects).
            requested[i] = np.where(alloc == 0, 0, req) if _has_zero(table, r.name) else req
        return requested, allocatable

    def score_nodes(self, nodes: NodeBatch, pod_requests: Sequence[int]) -> np.ndarray:
        """The strategy's scores of every node of ``nodes`` (int64), equal to :meth:`score`."""
        if not len(nodes):
            return np.zeros(0, dtype=np.int64)
        requested, allocatable = self.node_columns(nodes, pod_requests)
        return self.scorer.score_columns(requested, allocatable)
