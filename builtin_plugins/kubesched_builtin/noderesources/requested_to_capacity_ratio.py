"""The RequestedToCapacityRatio scoring strategy of NodeResourcesFit.

Upstream ``requested_to_capacity_ratio.go`` and ``helper.BuildBrokenLinearFunction``.
The configured shape (utilization 0..100 → score 0..10) is scaled by
``MaxNodeScore / MaxCustomPriorityScore`` = 10 to scores 0..100. Per resource the
utilization ``requested * 100 / allocatable`` (int64 division, 100 when requested
reaches allocatable) goes through the piecewise-linear function; resources scoring 0
are left out of the weighted average, which is rounded half away from zero.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from kubesched import MAX_NODE_SCORE, go_div, go_round, go_round_array

MAX_CUSTOM_PRIORITY_SCORE = 10
"""The highest score of a shape point (upstream ``config.MaxCustomPriorityScore``)."""
MAX_UTILIZATION = 100

_INT64_MAX = 2**63 - 1


def broken_linear_function(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """Upstream ``BuildBrokenLinearFunction``: ``f(p)`` through ``(utilization, score)``.

    ``shape[0].score`` below the first point, ``shape[-1].score`` above the last, linear
    in between, with Go's truncating integer division.
    """
    points = tuple(shape)

    def f(p: int) -> int:
        for i, (u, s) in enumerate(points):
            if p <= u:
                if i == 0:
                    return points[0][1]
                u0, s0 = points[i - 1]
                return s0 + go_div((s - s0) * (p - u0), u - u0)
        return points[-1][1]

    return f


def scaled_utilization(requested: int, capacity: int) -> int:
    """``requested * 100 / capacity`` clamped to 0..100 (upstream ``scaledUtilization``).

    Exact: upstream computes it in 128 bits where the int64 product would overflow;
    Python integers are exact anyway.
    """
    if capacity <= 0 or requested <= 0:
        return 0
    if requested >= capacity:
        return MAX_UTILIZATION
    return requested * MAX_UTILIZATION // capacity


class RequestedToCapacityRatioScorer:
    """Scores each resource with the shape function of its utilization (bin packing or
    spreading, as the shape says)."""

    def __init__(self, weights: Sequence[int], shape: Sequence[tuple[int, int]]) -> None:
        self.weights = tuple(weights)
        scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        raw = broken_linear_function([(u, s * scale) for u, s in shape])
        # Utilizations are integers in 0..100, so the function is a 101-entry table; both
        # paths read the same table.
        self._table = np.array([raw(p) for p in range(MAX_UTILIZATION + 1)], dtype=np.int64)
        self._table_list = self._table.tolist()

    def resource_score(self, requested: int, capacity: int) -> int:
        """``resourceScoringFunction``: the shape's value at the utilization."""
        if capacity == 0 or requested > capacity:
            return self._table_list[MAX_UTILIZATION]
        return self._table_list[scaled_utilization(requested, capacity)]

    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for weight, req, alloc in zip(self.weights, requested, allocatable, strict=True):
            if alloc == 0:
                continue
            s = self.resource_score(req, alloc)
            if s > 0:
                node_score += s * weight
                weight_sum += weight
        if weight_sum == 0:
            return 0
        return go_round(float(node_score) / float(weight_sum))

    def _utilization(self, req: np.ndarray, alloc: np.ndarray) -> np.ndarray:
        safe = np.where(alloc > 0, alloc, 1)
        big = req > _INT64_MAX // MAX_UTILIZATION
        if big.any():
            # The int64 product would overflow: compute those few exactly.
            util = np.empty(len(req), dtype=np.int64)
            small = ~big
            util[small] = req[small] * MAX_UTILIZATION // safe[small]
            util[big] = [
                scaled_utilization(int(r), int(a))
                for r, a in zip(req[big], alloc[big], strict=True)
            ]
        else:
            util = req * MAX_UTILIZATION // safe
        util = np.where(req >= alloc, MAX_UTILIZATION, util)
        return np.where((alloc <= 0) | (req <= 0), 0, util)

    def score_columns(self, requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
        n = requested.shape[1]
        node_score = np.zeros(n, dtype=np.int64)
        weight_sum = np.zeros(n, dtype=np.int64)
        for weight, req, alloc in zip(self.weights, requested, allocatable, strict=True):
            present = alloc != 0
            s = self._table[self._utilization(req, alloc)]
            s = np.where(req > alloc, self._table[MAX_UTILIZATION], s)
            counted = present & (s > 0)
            node_score += np.where(counted, s, 0) * weight
            weight_sum += np.where(counted, weight, 0)
        safe = np.where(weight_sum != 0, weight_sum, 1).astype(np.float64)
        return np.where(weight_sum != 0, go_round_array(node_score.astype(np.float64) / safe), 0)
