"""The LeastAllocated scoring strategy of NodeResourcesFit (upstream ``least_allocated.go``).

Per resource ``(allocatable - requested) * 100 / allocatable`` (0 when over-committed),
then the weighted average over the resources the node has, all in int64 division.
"""

from __future__ import annotations

import numpy as np

from kubesched import MAX_NODE_SCORE, go_div_array

from .resource_allocation import WeightedAverageScorer


class LeastAllocatedScorer(WeightedAverageScorer):
    """Favours nodes with more unused capacity (weighted average, int64 arithmetic)."""

    def resource_score_columns(self, requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """The unused share of ``capacity`` on 0..100, 0 when over-committed (upstream
        ``leastRequestedScore``)."""
        s = go_div_array((capacity - requested) * MAX_NODE_SCORE, capacity)
        return np.where(requested <= capacity, s, 0)
