"""NodeResourcesBalancedAllocation: favour nodes whose resource usage stays balanced (Score).

Upstream ``balanced_allocation.go`` (Kubernetes 1.35): for the configured resources
(cpu and memory by default) it takes each one's fraction ``requested / allocatable``
with the pod added (capped at 1, resources a node lacks skipped), and scores
``(1 - std) * 100`` truncated, ``std`` being the fractions' standard deviation
(``|f1 - f2| / 2`` for two). It uses the plain requests, not the non-zero defaults,
and PreScore skips best-effort pods (no request of any configured resource), which
would otherwise pile onto the same node (kubernetes#129138).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import Field, field_validator, model_validator

from kubesched import (
    MAX_NODE_SCORE,
    ArgsError,
    CycleState,
    NodeBatch,
    NodeInfo,
    PluginArgs,
    PodInfo,
    StateKey,
    Status,
    duplicate,
    hookimpl,
    invalid,
    raise_args_errors,
)
from kubesched_builtin import signers
from kubesched_builtin.names import NODE_RESOURCES_BALANCED_ALLOCATION

from .fit import POD_LEVEL_RESOURCES_GATE
from .resource_allocation import (
    ResourceAllocationScorer,
    ResourceSpec,
    default_resources,
    dra_capacity,
)

NAME = NODE_RESOURCES_BALANCED_ALLOCATION

PRE_SCORE_KEY: StateKey[tuple[int, ...]] = StateKey("PreScore" + NAME)
"""The pod's request of each configured resource, written at PreScore."""


class NodeResourcesBalancedAllocationArgs(PluginArgs):
    """``NodeResourcesBalancedAllocationArgs``."""

    resources: tuple[ResourceSpec, ...] = Field(
        default_factory=default_resources,
        description=(
            "Resources whose allocation is balanced; default cpu and memory. Each weight "
            "must be 1 (unset or 0 means 1); names must not repeat."
        ),
    )

    @field_validator("resources", mode="after")
    @classmethod
    def _default_resources(cls, value: tuple[ResourceSpec, ...]) -> tuple[ResourceSpec, ...]:
        # SetDefaults_NodeResourcesBalancedAllocationArgs: an empty list means the default.
        return value or default_resources()

    @model_validator(mode="after")
    def _validate(self) -> NodeResourcesBalancedAllocationArgs:
        # ValidateNodeResourcesBalancedAllocationArgs.
        errors: list[ArgsError] = []
        seen: set[str] = set()
        for i, r in enumerate(self.resources):
            if r.name in seen:
                errors.append(duplicate(("resources", i, "name"), r.name))
            else:
                seen.add(r.name)
            if r.weight != 1:
                errors.append(invalid(("resources", i, "weight"), r.weight, "must be 1"))
        raise_args_errors("NodeResourcesBalancedAllocationArgs", errors)
        return self


class BalancedScorer:
    """The balanced-allocation strategy (upstream ``balancedResourceScorer``), float64."""

    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        fractions: list[float] = []
        total = 0.0
        for req, alloc in zip(requested, allocatable, strict=True):
            if alloc == 0:
                continue
            # float64(requested) / float64(allocatable), as Go converts before dividing.
            fraction = min(float(req) / float(alloc), 1.0)
            total += fraction
            fractions.append(fraction)
        std = 0.0
        if len(fractions) == 2:
            std = abs((fractions[0] - fractions[1]) / 2)
        elif len(fractions) > 2:
            mean = total / float(len(fractions))
            acc = 0.0
            for f in fractions:
                acc = acc + (f - mean) * (f - mean)
            std = math.sqrt(acc / float(len(fractions)))
        return int((1 - std) * float(MAX_NODE_SCORE))

    def score_columns(self, requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
        if len(allocatable) == 2 and allocatable.all():
            # The usual case (cpu and memory, on every node): the two-fraction formula
            # below, without the masks for absent resources.
            f = np.minimum(requested.astype(np.float64) / allocatable.astype(np.float64), 1.0)
            return ((1 - np.abs((f[0] - f[1]) / 2)) * float(MAX_NODE_SCORE)).astype(np.int64)
        present = allocatable != 0
        safe = np.where(present, allocatable, 1).astype(np.float64)
        fractions = np.minimum(requested.astype(np.float64) / safe, 1.0)
        fractions = np.where(present, fractions, 0.0)
        count = present.sum(axis=0)
        # Sums in resource order, term by term, as the Go loop does (numpy's sum may
        # pair terms differently and round differently); absent resources add 0.0,
        # which changes nothing.
        total = np.zeros(fractions.shape[1])
        for row in fractions:
            total = total + row
        std = np.zeros(fractions.shape[1])
        two = count == 2
        if two.any():
            # The two present fractions, in resource order: a stable sort of "absent"
            # puts the present rows first.
            order = np.argsort(~present, axis=0, kind="stable")
            first = np.take_along_axis(fractions, order[:1], axis=0)[0]
            second = np.take_along_axis(fractions, order[1:2], axis=0)[0]
            std = np.where(two, np.abs((first - second) / 2), std)
        many = count > 2
        if many.any():
            n = np.where(many, count, 1).astype(np.float64)
            mean = total / n
            acc = np.zeros(fractions.shape[1])
            for row, here in zip(fractions, present, strict=True):
                d = row - mean
                acc = acc + np.where(here, d * d, 0.0)
            std = np.where(many, np.sqrt(acc / n), std)
        return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


class NodeResourcesBalancedAllocation:
    """Scores nodes by how evenly the pod would leave the configured resources used."""

    name = NAME
    Args = NodeResourcesBalancedAllocationArgs

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | None, handle: Any) -> None:
        args = args or NodeResourcesBalancedAllocationArgs()
        self._handle = handle
        self.scorer = ResourceAllocationScorer(
            NAME,
            args.resources,
            BalancedScorer(),
            use_requested=True,
            pod_level=handle.feature_enabled(POD_LEVEL_RESOURCES_GATE),
            dra=dra_capacity(handle),
        )

    def _requests(self, state: CycleState, pod_info: PodInfo) -> tuple[int, ...] | None:
        # None: a best-effort pod, whose score is 0 when PreScore did not run.
        requests = state.get(PRE_SCORE_KEY)
        if requests is None:
            requests = self.scorer.pod_requests(pod_info)
            if not any(requests):
                return None
        return requests

    @hookimpl
    def sign_pod(self, pod_info: PodInfo) -> list[tuple[str, Any]] | Status:
        """The score follows the pod's requests and overhead."""
        return signers.resources(pod_info, self._handle)

    @hookimpl
    def pre_score(self, state: CycleState, pod_info: PodInfo) -> Status | None:
        requests = self.scorer.pod_requests(pod_info)
        if not any(requests):
            return Status.skip()
        state.write(PRE_SCORE_KEY, requests)
        return None

    @hookimpl
    def score(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> int:
        requests = self._requests(state, pod_info)
        if requests is None:
            return 0
        return self.scorer.score(node_info, requests)

    @hookimpl
    def score_nodes(self, state: CycleState, pod_info: PodInfo, nodes: NodeBatch) -> np.ndarray:
        requests = self._requests(state, pod_info)
        if requests is None:
            return np.zeros(len(nodes), dtype=np.int64)
        return self.scorer.score_nodes(nodes, requests)
