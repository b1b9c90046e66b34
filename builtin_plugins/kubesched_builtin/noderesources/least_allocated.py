"""The LeastAllocated scoring strategy of NodeResourcesFit (upstream ``least_allocated.go``).

Per resource ``(allocatable - requested) * 100 / allocatable`` (0 when over-committed),
then the weighted average over the resources the node has, all in int64 division.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched import MAX_NODE_SCORE

from .resource_allocation import go_div, go_div_array


def least_requested_score(requested: int, capacity: int) -> int:
    """The unused share of ``capacity`` on 0..100 (upstream ``leastRequestedScore``)."""
    if capacity == 0 or requested > capacity:
        return 0
    return go_div((capacity - requested) * MAX_NODE_SCORE, capacity)


class LeastAllocatedScorer:
    """Favours nodes with more unused capacity (weighted average, int64 arithmetic)."""

    def __init__(self, weights: Sequence[int]) -> None:
        self.weights = tuple(weights)

    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for weight, req, alloc in zip(self.weights, requested, allocatable, strict=True):
            if alloc == 0:
                continue
            node_score += least_requested_score(req, alloc) * weight
            weight_sum += weight
        return go_div(node_score, weight_sum) if weight_sum else 0

    def score_columns(self, requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
        n = requested.shape[1]
        node_score = np.zeros(n, dtype=np.int64)
        weight_sum = np.zeros(n, dtype=np.int64)
        for weight, req, alloc in zip(self.weights, requested, allocatable, strict=True):
            present = alloc != 0
            safe = np.where(present, alloc, 1)
            s = go_div_array((safe - req) * MAX_NODE_SCORE, safe)
            s = np.where(present & (req <= alloc), s, 0)
            node_score += s * weight
            weight_sum += np.where(present, weight, 0)
        return np.where(
            weight_sum != 0, go_div_array(node_score, np.where(weight_sum != 0, weight_sum, 1)), 0
        )
