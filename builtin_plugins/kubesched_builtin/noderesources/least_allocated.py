"""The LeastAllocated scoring strategy of NodeResourcesFit (upstream ``least_allocated.go``).

Per resource ``(allocatable - requested) * 100 / allocatable`` (0 when over-committed),
then the weighted average over the resources the node has, all in int64 division
(exact where the int64 product would overflow).
"""

from __future__ import annotations

import numpy as np

from kubesched import MAX_NODE_SCORE, mul_div_array, sat_sub_array

from .resource_allocation import WeightedAverageScorer


class LeastAllocatedScorer(WeightedAverageScorer):
    """Favours nodes with more unused capacity (weighted average, int64 arithmetic)."""

    def resource_score_columns(self, requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """The unused share of ``capacity`` on 0..100, 0 when over-committed (upstream
        ``leastRequestedScore``)."""
        # capacity > 0: truncating and flooring agree on the non-negative numerators,
        # and an over-committed resource (negative numerator) scores 0.
        return mul_div_array(
            np.maximum(sat_sub_array(capacity, requested), 0), MAX_NODE_SCORE, capacity
        )
