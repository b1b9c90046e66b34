"""LowRiskOverCommitment: avoid nodes where over-commitment risks running out (PreScore, Score).

Follows kubernetes-sigs/scheduler-plugins ``pkg/trimaran/lowriskovercommitment``. For CPU
and memory, on each node with the pod added, two risks in [0, 1]:

* the *limit risk*: how far the pods' limits exceed the node's allocatable,
  ``(limits - allocatable) / (limits - requests)`` when the limits exceed it;
* the *load risk*: a beta distribution fitted to the measured load (its standard
  deviation widened by ``√smoothingWindowSize``) gives the probability that the load
  stays below what the other pods request; the risk is its complement (conditioned on
  the load staying below their limits when those are under the allocatable).

A resource's risk is ``w × limit risk + (1 - w) × load risk`` with ``w`` its
``riskLimitWeights`` entry; the node's score is ``round(100 × (1 - max(cpu, memory)))``.
Best-effort pods (no requests, no limits) and nodes without metrics score 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field, model_validator

from kubesched import (
    MAX_NODE_SCORE,
    CycleState,
    NodeInfo,
    StateKey,
    go_round,
    hookimpl,
)
from kubesched.api import CPU, MEMORY, Pod

from .beta import compute_probability, max_variance
from .metrics import (
    CPU_METRIC,
    MEGA_FACTOR,
    MEMORY_METRIC,
    Metric,
    MetricsSource,
    TrimaranArgs,
    pod_limits,
    pod_requests,
    resource_data,
)

__all__ = [
    "NAME",
    "LowRiskOverCommitment",
    "LowRiskOverCommitmentArgs",
    "NodeRequestsAndLimits",
    "resource_risk",
]

NAME = "LowRiskOverCommitment"

DEFAULT_SMOOTHING_WINDOW_SIZE = 5
DEFAULT_RISK_LIMIT_WEIGHT = 0.5
MAX_VARIANCE_ALLOWANCE = 0.99
"""The fitted variance stays below this fraction of the largest a beta distribution has."""


def _default_weights() -> dict[str, float]:
    return {CPU: DEFAULT_RISK_LIMIT_WEIGHT, MEMORY: DEFAULT_RISK_LIMIT_WEIGHT}


class LowRiskOverCommitmentArgs(TrimaranArgs):
    """``LowRiskOverCommitmentArgs`` with scheduler-plugins' v1 defaults."""

    smoothing_window_size: int = Field(
        default=DEFAULT_SMOOTHING_WINDOW_SIZE,
        description=(
            "Number of metrics windows the measured load is smoothed over; 0 or less means 5."
        ),
    )
    risk_limit_weights: dict[str, float] = Field(
        default_factory=_default_weights,
        description=(
            "Per resource, the weight in [0, 1] of the limit risk against the load risk; "
            "a weight outside [0, 1] means 0.5, cpu and memory default to 0.5."
        ),
    )

    @model_validator(mode="after")
    def _defaults(self) -> LowRiskOverCommitmentArgs:
        # SetDefaults_LowRiskOverCommitmentArgs (upstream validates nothing else).
        if self.smoothing_window_size <= 0:
            object.__setattr__(self, "smoothing_window_size", DEFAULT_SMOOTHING_WINDOW_SIZE)
        if not self.risk_limit_weights:
            object.__setattr__(self, "risk_limit_weights", _default_weights())
        else:
            object.__setattr__(
                self,
                "risk_limit_weights",
                {
                    r: (w if 0 <= w <= 1 else DEFAULT_RISK_LIMIT_WEIGHT)
                    for r, w in self.risk_limit_weights.items()
                },
            )
        return self


@dataclass(frozen=True, slots=True)
class _PodResources:
    requests: tuple[int, int]
    limits: tuple[int, int]


POD_RESOURCES_KEY: StateKey[_PodResources] = StateKey(NAME + ".PodResources")


@dataclass(frozen=True, slots=True)
class NodeRequestsAndLimits:
    """Upstream ``NodeRequestsAndLimits`` of one resource on a node with the pod added:
    requests and limits summed over its pods (requests capped at the allocatable),
    the same without the pod, and the allocatable."""

    request: int
    limit: int
    request_minus_pod: int
    limit_minus_pod: int
    capacity: int


def resource_risk(
    metrics: Sequence[Metric],
    metric_type: str,
    totals: NodeRequestsAndLimits,
    weight: float,
    smoothing_window_size: int,
    mega: bool,
) -> float:
    """Upstream ``computeRisk`` of one resource (``mega``: compare memory in MiB)."""
    request, limit, capacity = totals.request, totals.limit, totals.capacity
    request_minus_pod, limit_minus_pod = totals.request_minus_pod, totals.limit_minus_pod
    risk_limit = risk_load = 0.0
    if limit > capacity:
        risk_limit = (limit - capacity) / (limit - request)
    avg, std, valid = resource_data(metrics, metric_type)
    if valid:
        cap = float(capacity) * MEGA_FACTOR if mega else float(capacity)
        mu = sigma = 0.0
        if cap > 0:
            # GetMuSigma of the load alone (the pod's request does not count here).
            used_avg = avg * cap / 100
            used_std = std * cap / 100
            mu = max(min(used_avg / cap, 1.0), 0.0)
            sigma = max(min(used_std / cap, 1.0), 0.0)
        sigma *= math.sqrt(smoothing_window_size)
        sigma = min(sigma, math.sqrt(max_variance(mu) * MAX_VARIANCE_ALLOWANCE))
        alloc_threshold = min(max(request_minus_pod / capacity, 0.0), 1.0) if capacity else 0.0
        alloc_prob, dist = compute_probability(mu, sigma, alloc_threshold)
        if limit_minus_pod < capacity and request_minus_pod <= limit_minus_pod:
            limit_threshold = limit_minus_pod / capacity
            if limit_threshold == 0:
                alloc_prob = 1.0  # zero over zero
            elif dist is not None:
                limit_prob = dist.cdf(limit_threshold)
                if limit_prob > 0:
                    alloc_prob = min(max(alloc_prob / limit_prob, 0.0), 1.0)
        risk_load = 1 - alloc_prob
    total = weight * risk_limit + (1 - weight) * risk_load
    return min(max(total, 0.0), 1.0)


class LowRiskOverCommitment:
    """Favours nodes where the pods' limits and the measured load leave least risk of
    exhausting CPU or memory."""

    name = NAME
    sdk_version = "1.0"
    Args = LowRiskOverCommitmentArgs

    def __init__(self, args: LowRiskOverCommitmentArgs | None, handle: Any) -> None:
        args = args or LowRiskOverCommitmentArgs()
        self.source = MetricsSource(args)
        self.window = args.smoothing_window_size
        self.weights: Mapping[str, float] = {**_default_weights(), **args.risk_limit_weights}
        # Per node: (NodeInfo generation, summed requests and limits of its pods).
        self._totals: dict[str, tuple[int, tuple[int, int, int, int]]] = {}

    @hookimpl
    def pre_score(self, state: CycleState, pod: Pod) -> None:
        state.write(POD_RESOURCES_KEY, _PodResources(pod_requests(pod), pod_limits(pod)))

    def _node_totals(self, node_info: NodeInfo) -> tuple[int, int, int, int]:
        cached = self._totals.get(node_info.name)
        if cached is not None and cached[0] == node_info.generation:
            return cached[1]
        req_cpu = req_mem = lim_cpu = lim_mem = 0
        for pi in node_info.pods:
            rc, rm = pod_requests(pi.pod)
            lc, lm = pod_limits(pi.pod)
            req_cpu, req_mem, lim_cpu, lim_mem = (
                req_cpu + rc,
                req_mem + rm,
                lim_cpu + lc,
                lim_mem + lm,
            )
        totals = (req_cpu, req_mem, lim_cpu, lim_mem)
        self._totals[node_info.name] = (node_info.generation, totals)
        return totals

    @hookimpl
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        resources = state.get(POD_RESOURCES_KEY)
        if resources is None:
            resources = _PodResources(pod_requests(pod), pod_limits(pod))
        if resources.requests == (0, 0) and resources.limits == (0, 0):
            return 0  # best effort: not this plugin's concern
        metrics = self.source.node_metrics(node_info.node)
        if metrics is None:
            return 0
        node_req_cpu, node_req_mem, node_lim_cpu, node_lim_mem = self._node_totals(node_info)
        alloc = node_info.allocatable
        risks = []
        for i, (metric_type, resource, node_req, node_lim, cap) in enumerate(
            (
                (CPU_METRIC, CPU, node_req_cpu, node_lim_cpu, alloc.milli_cpu),
                (MEMORY_METRIC, MEMORY, node_req_mem, node_lim_mem, alloc.memory),
            )
        ):
            totals = NodeRequestsAndLimits(
                request=min(node_req + resources.requests[i], cap),
                limit=node_lim + resources.limits[i],
                request_minus_pod=min(node_req, cap),
                limit_minus_pod=node_lim,
                capacity=cap,
            )
            risks.append(
                resource_risk(
                    metrics,
                    metric_type,
                    totals,
                    self.weights.get(resource, 0.0),
                    self.window,
                    mega=resource == MEMORY,
                )
            )
        return go_round((1 - max(risks)) * MAX_NODE_SCORE)
