"""TargetLoadPacking: pack nodes up to a target CPU utilisation measured on the nodes (Score).

Follows kubernetes-sigs/scheduler-plugins ``pkg/trimaran/targetloadpacking`` (master)
for simulations and clusters without a load watcher: a node's measured CPU utilisation
comes from the Trimaran metrics source (:mod:`kubesched_contrib.trimaran.metrics`: a node
annotation, percent of capacity, default key ``kubesched.io/cpu-utilization``, or a
load-watcher metrics file) instead of a metrics provider. The score is upstream's:
with ``U`` the node's predicted utilisation in percent once the pod runs on it and ``T``
the target,

* ``U <= T``: ``round((100 - T) * U / T + T)`` (from T up to 100 at the target: packing),
* ``T < U <= 100``: ``round(T * (100 - U) / (100 - T))`` (penalised, down to 0),
* ``U > 100``, or no measured utilisation: 0.

``U = 100 * (measured + pod + placed) / capacity`` in millicores of the node's
``status.capacity.cpu``: ``measured`` from the metrics, ``pod`` the pod's predicted
usage (a container's cpu limit, else its request times ``defaultRequestsMultiplier``,
else ``defaultRequests.cpu``; plus overhead) and ``placed`` the predicted usage of the
pods this profile has placed on the node since (Reserve), still on it: the metrics are
a measurement taken before they ran (upstream adds the pods bound within the last
metrics window the same way).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field, model_validator

from kubesched import (
    ArgsError,
    NodeBatch,
    NodeInfo,
    PodInfo,
    go_round,
    go_round_array,
    hookimpl,
    invalid,
    raise_args_errors,
)
from kubesched.api import CPU, NullableDict, Pod, Quantity, parse_quantity

from ..trimaran.metrics import (
    DEFAULT_CPU_UTILIZATION_ANNOTATION,
    MetricsSource,
    RowCache,
    TrimaranArgs,
    cpu_capacity_column,
    cpu_capacity_milli,
    cpu_utilization,
)

__all__ = [
    "DEFAULT_CPU_UTILIZATION_ANNOTATION",
    "NAME",
    "TargetLoadPacking",
    "TargetLoadPackingArgs",
    "predict_utilization",
]

NAME = "TargetLoadPacking"

DEFAULT_TARGET_UTILIZATION = 40
DEFAULT_REQUESTS_MILLI_CORES = 1000
DEFAULT_REQUESTS_MULTIPLIER = "1.5"


def _default_requests() -> dict[str, Quantity]:
    return {CPU: parse_quantity(f"{DEFAULT_REQUESTS_MILLI_CORES}m")}


class TargetLoadPackingArgs(TrimaranArgs):
    """``TargetLoadPackingArgs`` with scheduler-plugins' v1 defaults; the metrics provider
    (``watcherAddress``, ``metricProvider``) is replaced by the Trimaran metrics source."""

    default_requests: NullableDict[str, Quantity] = Field(
        default_factory=_default_requests,
        description="Predicted usage of a container without cpu request or limit (cpu: 1000m).",
    )
    default_requests_multiplier: str = Field(
        default=DEFAULT_REQUESTS_MULTIPLIER,
        description=(
            "A container with a cpu request but no limit is predicted to use request × this."
        ),
    )
    target_utilization: int = Field(
        default=DEFAULT_TARGET_UTILIZATION,
        description="Target CPU utilisation of a node, percent; 0 or less means 40.",
    )

    @model_validator(mode="after")
    def _validate(self) -> TargetLoadPackingArgs:
        # SetDefaults_TargetLoadPackingArgs: a missing or non-positive target means 40.
        if self.target_utilization <= 0:
            object.__setattr__(self, "target_utilization", DEFAULT_TARGET_UTILIZATION)
        if not self.default_requests:
            object.__setattr__(self, "default_requests", _default_requests())
        errors: list[ArgsError] = []
        try:
            float(self.default_requests_multiplier)
        except ValueError as err:
            errors.append(
                invalid(
                    ("defaultRequestsMultiplier",),
                    self.default_requests_multiplier,
                    f"unable to parse DefaultRequestsMultiplier: {err}",
                )
            )
        if self.target_utilization > 100:
            # Not validated upstream; above 100 the score formula inverts.
            errors.append(
                invalid(
                    ("targetUtilization",), self.target_utilization, "not in valid range [1, 100]"
                )
            )
        raise_args_errors("TargetLoadPackingArgs", errors)
        return self


def predict_utilization(pod: Pod, default_milli: int, multiplier: float) -> int:
    """Upstream ``PredictUtilisation`` summed over the pod's containers, plus overhead:
    the cpu limit, else ``round(request × multiplier)``, else the default (millicores)."""
    total = 0
    for c in pod.spec.containers:
        res = c.resources
        limits = (res.limits or {}) if res is not None else {}
        requests = (res.requests or {}) if res is not None else {}
        if CPU in limits:
            total += limits[CPU].milli_value()
        elif CPU in requests:
            total += go_round(float(requests[CPU].milli_value()) * multiplier)
        else:
            total += default_milli
    overhead = pod.spec.overhead or {}
    if CPU in overhead:
        total += overhead[CPU].milli_value()
    return total


class TargetLoadPacking:
    """Favours nodes whose predicted CPU utilisation stays just under the target."""

    name = NAME
    sdk_version = "1.0"
    Args = TargetLoadPackingArgs

    def __init__(self, args: TargetLoadPackingArgs | None, handle: Any) -> None:
        args = args or TargetLoadPackingArgs()
        self.target = float(args.target_utilization)
        cpu = args.default_requests.get(CPU)
        self.default_milli = cpu.milli_value() if cpu is not None else 0
        self.multiplier = float(args.default_requests_multiplier)
        self.source = MetricsSource(args, handle)
        # Pods this profile placed, per node: uid -> predicted millicores. A pod that
        # left the node no longer counts (checked against the snapshot's NodeInfo).
        self._placed: dict[str, dict[str, int]] = {}
        self._placed_cache: dict[str, tuple[int, int]] = {}

    # -- bookkeeping of placed pods ------------------------------------------------------
    @hookimpl
    def reserve(self, pod: Pod, pod_info: PodInfo, node_name: str) -> None:
        usage = predict_utilization(pod, self.default_milli, self.multiplier)
        self._placed.setdefault(node_name, {})[pod_info.uid] = usage

    @hookimpl
    def unreserve(self, pod_info: PodInfo, node_name: str) -> None:
        placed = self._placed.get(node_name)
        if placed is not None:
            placed.pop(pod_info.uid, None)
            if not placed:
                del self._placed[node_name]

    def _missing(self, node_info: NodeInfo) -> int:
        placed = self._placed.get(node_info.name)
        if not placed:
            return 0
        # NodeInfo.generation changes with every pod added or removed.
        cached = self._placed_cache.get(node_info.name)
        if cached is not None and cached[0] == node_info.generation:
            return cached[1]
        present = {pi.uid for pi in node_info.pods}
        # A placed pod is on its node from its own cycle on (assumed, then bound): one
        # no longer there is gone for good, so it is forgotten rather than kept forever.
        for uid in [uid for uid in placed if uid not in present]:
            del placed[uid]
        missing = sum(placed.values())
        self._placed_cache[node_info.name] = (node_info.generation, missing)
        return missing

    # -- Score --------------------------------------------------------------------------
    @hookimpl
    def score(self, pod: Pod, node_info: NodeInfo) -> int:
        util = cpu_utilization(self.source.node_metrics(node_info.node))
        if util is None:
            return 0  # no metrics: avoid the node (MinNodeScore)
        pod_milli = predict_utilization(pod, self.default_milli, self.multiplier)
        cap = float(cpu_capacity_milli(node_info.node))
        util_milli = (util / 100) * cap
        predicted = 0.0
        if cap != 0:
            missing = float(self._missing(node_info))
            predicted = 100 * (util_milli + float(pod_milli) + missing) / cap
        target = self.target
        if predicted > target:
            if predicted > 100:
                return 0
            return go_round(target * (100 - predicted) / (100 - target))
        return go_round((100 - target) * predicted / target + target)

    @hookimpl
    def score_nodes(self, pod: Pod, nodes: NodeBatch) -> np.ndarray:
        table, rows = nodes.table, nodes.rows
        util = self.source.columns(table).cpu_util[rows]
        cap = cpu_capacity_column(table)[rows]
        # Recomputed only for the nodes whose pods changed since (NodeInfo generation).
        cache = RowCache.of(table, (NAME, "missing", id(self)), 1)
        missing = cache.gather(nodes, lambda ni: (self._missing(ni),))[:, 0]
        pod_milli = float(predict_utilization(pod, self.default_milli, self.multiplier))
        has_metrics = ~np.isnan(util)
        util = np.where(has_metrics, util, 0.0)
        util_milli = (util / 100) * cap
        safe_cap = np.where(cap != 0, cap, 1.0)
        predicted = np.where(cap != 0, 100 * (util_milli + pod_milli + missing) / safe_cap, 0.0)
        target = self.target
        # A target of 100 divides by zero in the penalised branch, which then never applies.
        with np.errstate(all="ignore"):
            penalised = go_round_array(target * (100 - predicted) / (100 - target))
            packed = go_round_array((100 - target) * predicted / target + target)
        scores = np.where(predicted > target, np.where(predicted > 100, 0, penalised), packed)
        return np.where(has_metrics, scores, 0).astype(np.int64)
