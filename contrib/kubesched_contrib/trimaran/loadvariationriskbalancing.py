"""LoadVariationRiskBalancing: balance the risk of load variation across nodes (Score).

Follows kubernetes-sigs/scheduler-plugins ``pkg/trimaran/loadvariationriskbalancing``.
For CPU and for memory, with ``avg`` and ``std`` the node's measured utilisation
average and standard deviation (fractions of the node's allocatable) and ``req`` the
pod's request (fraction), the risk is
``(clamp(avg + req) + clamp(margin × std^(1/sensitivity))) / 2`` and the resource's
score ``(1 - risk) × 100``; the node's score is the smaller of the two (the only one
when one resource has no metrics), rounded; 0 without metrics.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from kubesched import MAX_NODE_SCORE, NodeBatch, NodeInfo, go_round, go_round_array, hookimpl
from kubesched.api import Pod

from .metrics import (
    CPU_METRIC,
    MEGA_FACTOR,
    MEMORY_METRIC,
    MetricsSource,
    TrimaranArgs,
    pod_requests,
    resource_data,
)

__all__ = [
    "NAME",
    "LoadVariationRiskBalancing",
    "LoadVariationRiskBalancingArgs",
    "risk_score",
]

NAME = "LoadVariationRiskBalancing"

DEFAULT_SAFE_VARIANCE_MARGIN = 1.0
DEFAULT_SAFE_VARIANCE_SENSITIVITY = 1.0


class LoadVariationRiskBalancingArgs(TrimaranArgs):
    """``LoadVariationRiskBalancingArgs`` with scheduler-plugins' v1 defaults."""

    safe_variance_margin: float = Field(
        default=DEFAULT_SAFE_VARIANCE_MARGIN,
        description="Multiplier of the standard deviation in the risk; negative means 1.",
    )
    safe_variance_sensitivity: float = Field(
        default=DEFAULT_SAFE_VARIANCE_SENSITIVITY,
        description="Root power of the standard deviation in the risk; negative means 1.",
    )

    @model_validator(mode="after")
    def _defaults(self) -> LoadVariationRiskBalancingArgs:
        # SetDefaults_LoadVariationRiskBalancingArgs: negative values take the defaults
        # (upstream validates nothing else).
        if self.safe_variance_margin < 0:
            object.__setattr__(self, "safe_variance_margin", DEFAULT_SAFE_VARIANCE_MARGIN)
        if self.safe_variance_sensitivity < 0:
            object.__setattr__(self, "safe_variance_sensitivity", DEFAULT_SAFE_VARIANCE_SENSITIVITY)
        return self


def _clamp01(x: float) -> float:
    return max(min(x, 1.0), 0.0)


def _root_power(sensitivity: float) -> float:
    # Go's 1/0 is +Inf, and sigma^Inf is 0 below 1 (1 at 1): a zero sensitivity
    # ignores any deviation short of the whole capacity.
    return math.inf if sensitivity == 0 else 1 / sensitivity


def risk_score(
    capacity: float, req: float, used_avg: float, used_std: float, margin: float, sensitivity: float
) -> float:
    """Upstream ``computeScore`` of one resource: ``(1 - risk) × 100`` (not rounded);
    0 for a node without capacity."""
    if capacity <= 0:
        return 0.0
    req = max(req, 0.0)
    used_avg = max(min(used_avg, capacity), 0.0)
    used_std = max(min(used_std, capacity), 0.0)
    mu = _clamp01((used_avg + req) / capacity)
    sigma = _clamp01(used_std / capacity)
    sigma = sigma ** _root_power(sensitivity)
    sigma = _clamp01(sigma * margin)
    risk = (mu + sigma) / 2
    return (1.0 - risk) * MAX_NODE_SCORE


def _risk_score_array(
    capacity: np.ndarray,
    req: float,
    avg_percent: np.ndarray,
    std_percent: np.ndarray,
    margin: float,
    sensitivity: float,
) -> np.ndarray:
    """:func:`risk_score` over arrays, the same float64 operations in the same order."""
    used_avg = avg_percent * capacity / 100
    used_std = std_percent * capacity / 100
    used_avg = np.maximum(np.minimum(used_avg, capacity), 0.0)
    used_std = np.maximum(np.minimum(used_std, capacity), 0.0)
    with np.errstate(all="ignore"):
        mu = np.clip((used_avg + max(req, 0.0)) / capacity, 0.0, 1.0)
        sigma = np.clip(used_std / capacity, 0.0, 1.0)
    sigma = np.power(sigma, _root_power(sensitivity))
    sigma = np.clip(sigma * margin, 0.0, 1.0)
    scores = (1.0 - (mu + sigma) / 2) * MAX_NODE_SCORE
    return np.where(capacity > 0, scores, 0.0)


class LoadVariationRiskBalancing:
    """Favours nodes whose measured load, average plus variation, is lowest."""

    name = NAME
    sdk_version = "1.0"
    Args = LoadVariationRiskBalancingArgs

    def __init__(self, args: LoadVariationRiskBalancingArgs | None, handle: Any) -> None:
        args = args or LoadVariationRiskBalancingArgs()
        self.source = MetricsSource(args, handle)
        self.margin = args.safe_variance_margin
        self.sensitivity = args.safe_variance_sensitivity

    @hookimpl
    def score(self, pod: Pod, node_info: NodeInfo) -> int:
        metrics = self.source.node_metrics(node_info.node)
        if metrics is None:
            return 0
        req_cpu, req_memory = pod_requests(pod)
        alloc = node_info.allocatable
        scores = []
        for rtype, capacity, req in (
            (CPU_METRIC, float(alloc.milli_cpu), float(req_cpu)),
            (MEMORY_METRIC, float(alloc.memory) * MEGA_FACTOR, float(req_memory) * MEGA_FACTOR),
        ):
            avg, std, valid = resource_data(metrics, rtype)
            if valid:
                used_avg = avg * capacity / 100
                used_std = std * capacity / 100
                scores.append(
                    risk_score(capacity, req, used_avg, used_std, self.margin, self.sensitivity)
                )
        return go_round(min(scores)) if scores else 0

    @hookimpl
    def score_nodes(self, pod: Pod, nodes: NodeBatch) -> np.ndarray:
        cols = self.source.columns(nodes.table)
        rows = nodes.rows
        req_cpu, req_memory = pod_requests(pod)
        table = nodes.table
        cpu_cap = table.allocatable["cpu"][rows].astype(np.float64)
        memory_cap = table.allocatable["memory"][rows].astype(np.float64) * MEGA_FACTOR
        per_resource = []
        for cap, req, avg, std in (
            (cpu_cap, float(req_cpu), cols.cpu_avg[rows], cols.cpu_std[rows]),
            (
                memory_cap,
                float(req_memory) * MEGA_FACTOR,
                cols.memory_avg[rows],
                cols.memory_std[rows],
            ),
        ):
            valid = ~np.isnan(avg)
            score = _risk_score_array(
                cap,
                req,
                np.where(valid, avg, 0.0),
                np.where(valid, std, 0.0),
                self.margin,
                self.sensitivity,
            )
            # A resource without metrics does not bound the node's score (inf in min).
            per_resource.append(np.where(valid, score, np.inf))
        total = np.minimum(per_resource[0], per_resource[1])
        has = np.isfinite(total)
        return np.where(has, go_round_array(np.where(has, total, 0.0)), 0).astype(np.int64)
