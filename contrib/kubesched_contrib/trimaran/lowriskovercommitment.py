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

import numpy as np
from pydantic import Field, model_validator

from kubesched import (
    MAX_NODE_SCORE,
    CycleState,
    NodeBatch,
    NodeInfo,
    StateKey,
    go_round,
    go_round_array,
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
    RowCache,
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


def limit_risk(request: int, limit: int, capacity: int) -> float:
    """The overcommitment the limits allow: ``(limit - capacity) / (limit - request)``
    when the limits exceed the capacity, else 0."""
    if limit > capacity:
        return (limit - capacity) / (limit - request)
    return 0.0


def load_risk(
    metrics: Sequence[Metric],
    metric_type: str,
    request_minus_pod: int,
    limit_minus_pod: int,
    capacity: int,
    smoothing_window_size: int,
    mega: bool,
) -> float:
    """The risk that the measured load exceeds what the node's other pods request: 1 -
    P(load <= their requests), conditioned on load <= their limits when those are
    below the capacity (``mega``: compare memory in MiB). It depends on the node's pods,
    not on the pod being scheduled."""
    avg, std, valid = resource_data(metrics, metric_type)
    if not valid:
        return 0.0
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
    return 1 - alloc_prob


def _combine(weight: float, risk_limit: float, risk_load: float) -> float:
    return min(max(weight * risk_limit + (1 - weight) * risk_load, 0.0), 1.0)


def resource_risk(
    metrics: Sequence[Metric],
    metric_type: str,
    totals: NodeRequestsAndLimits,
    weight: float,
    smoothing_window_size: int,
    mega: bool,
) -> float:
    """Upstream ``computeRisk`` of one resource: ``weight × limit risk + (1 - weight) ×
    load risk``, within [0, 1]."""
    risk_load = load_risk(
        metrics,
        metric_type,
        totals.request_minus_pod,
        totals.limit_minus_pod,
        totals.capacity,
        smoothing_window_size,
        mega,
    )
    return _combine(weight, limit_risk(totals.request, totals.limit, totals.capacity), risk_load)


@dataclass(frozen=True, slots=True)
class _NodeState:
    """What a node's score needs that changes only with its pods or its metrics: its
    pods' summed requests and limits, its allocatable and the load risk per resource."""

    requests: tuple[int, int]
    limits: tuple[int, int]
    capacity: tuple[int, int]
    load_risks: tuple[float, float]


class LowRiskOverCommitment:
    """Favours nodes where the pods' limits and the measured load leave least risk of
    exhausting CPU or memory."""

    name = NAME
    sdk_version = "1.0"
    Args = LowRiskOverCommitmentArgs

    def __init__(self, args: LowRiskOverCommitmentArgs | None, handle: Any) -> None:
        args = args or LowRiskOverCommitmentArgs()
        self.source = MetricsSource(args, handle)
        self.window = args.smoothing_window_size
        self.weights: Mapping[str, float] = {**_default_weights(), **args.risk_limit_weights}
        # Per node: (NodeInfo generation, what its score needs besides the pod).
        self._states: dict[str, tuple[int, _NodeState]] = {}

    @hookimpl
    def pre_score(self, state: CycleState, pod: Pod) -> None:
        state.write(POD_RESOURCES_KEY, _PodResources(pod_requests(pod), pod_limits(pod)))

    def _node_state(self, node_info: NodeInfo) -> _NodeState:
        cached = self._states.get(node_info.name)
        if cached is not None and cached[0] == node_info.generation:
            return cached[1]
        metrics = self.source.node_metrics(node_info.node) or ()
        req_cpu = req_mem = lim_cpu = lim_mem = 0
        for pi in node_info.pods:
            rc, rm = pod_requests(pi.pod)
            lc, lm = pod_limits(pi.pod)
            req_cpu, req_mem = req_cpu + rc, req_mem + rm
            lim_cpu, lim_mem = lim_cpu + lc, lim_mem + lm
        alloc = node_info.allocatable
        capacity = (alloc.milli_cpu, alloc.memory)
        load_risks = tuple(
            load_risk(
                metrics,
                metric_type,
                min(req, cap),
                lim,
                cap,
                self.window,
                mega=metric_type == MEMORY_METRIC,
            )
            for metric_type, req, lim, cap in (
                (CPU_METRIC, req_cpu, lim_cpu, capacity[0]),
                (MEMORY_METRIC, req_mem, lim_mem, capacity[1]),
            )
        )
        state = _NodeState((req_cpu, req_mem), (lim_cpu, lim_mem), capacity, load_risks)
        # NodeInfo.generation changes with the node's pods and with its Node object.
        self._states[node_info.name] = (node_info.generation, state)
        return state

    def _state_row(self, node_info: NodeInfo) -> tuple[float, ...]:
        s = self._node_state(node_info)
        return (*s.requests, *s.limits, *s.capacity, *s.load_risks)

    def _pod_resources(self, state: CycleState, pod: Pod) -> _PodResources:
        resources = state.get(POD_RESOURCES_KEY)
        if resources is None:
            resources = _PodResources(pod_requests(pod), pod_limits(pod))
        return resources

    def _score(self, resources: _PodResources, node_info: NodeInfo) -> int:
        if self.source.node_metrics(node_info.node) is None:
            return 0
        node = self._node_state(node_info)
        risks = []
        for i, resource in enumerate((CPU, MEMORY)):
            cap = node.capacity[i]
            request = min(node.requests[i] + resources.requests[i], cap)
            limit = node.limits[i] + resources.limits[i]
            risks.append(
                _combine(
                    self.weights.get(resource, 0.0),
                    limit_risk(request, limit, cap),
                    node.load_risks[i],
                )
            )
        return go_round((1 - max(risks)) * MAX_NODE_SCORE)

    @staticmethod
    def _best_effort(resources: _PodResources) -> bool:
        # Not this plugin's concern: it scores them all 0.
        return resources.requests == (0, 0) and resources.limits == (0, 0)

    @hookimpl
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        resources = self._pod_resources(state, pod)
        return 0 if self._best_effort(resources) else self._score(resources, node_info)

    @hookimpl
    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeBatch) -> np.ndarray:
        resources = self._pod_resources(state, pod)
        n = len(nodes.rows)
        has = self.source.columns(nodes.table).has_metrics[nodes.rows]
        if self._best_effort(resources) or not has.any():
            return np.zeros(n, dtype=np.int64)
        # The load risks, the costly part (a beta distribution per node), are cached per
        # node until its pods change; the rest is the same arithmetic as ``_score``, on
        # arrays (float64 holds the integer amounts exactly).
        cache = RowCache.of(nodes.table, (NAME, "node-state", id(self)), 8)
        values = cache.gather(nodes, self._state_row, where=has)
        requests, limits = values[:, 0:2], values[:, 2:4]
        capacity, load_risks = values[:, 4:6], values[:, 6:8]
        risks = []
        for i, resource in enumerate((CPU, MEMORY)):
            cap = capacity[:, i]
            request = np.minimum(requests[:, i] + resources.requests[i], cap)
            limit = limits[:, i] + resources.limits[i]
            over = limit > cap
            with np.errstate(all="ignore"):
                risk_limit = np.where(over, (limit - cap) / np.where(over, limit - request, 1), 0.0)
            weight = self.weights.get(resource, 0.0)
            load = load_risks[:, i]
            risks.append(np.clip(weight * risk_limit + (1 - weight) * load, 0.0, 1.0))
        scores = go_round_array((1 - np.maximum(risks[0], risks[1])) * MAX_NODE_SCORE)
        return np.where(has, scores, 0).astype(np.int64)
