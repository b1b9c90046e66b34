"""The MostAllocated scoring strategy of NodeResourcesFit (upstream ``most_allocated.go``).

Per resource ``requested * 100 / allocatable`` with ``requested`` capped at
``allocatable`` (pods without requests count with defaults, so the sum can exceed it),
then the weighted average over the resources the node has, in int64 division (exact
where the int64 product would overflow).
"""

from __future__ import annotations

import numpy as np

from kubesched import MAX_NODE_SCORE, mul_div_array

from .resource_allocation import WeightedAverageScorer


class MostAllocatedScorer(WeightedAverageScorer):
    """Favours nodes with more requested capacity (bin packing)."""

    def resource_score_columns(self, requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """The used share of ``capacity`` on 0..100, ``requested`` capped at it (upstream
        ``mostRequestedScore``)."""
        return mul_div_array(np.minimum(requested, capacity), MAX_NODE_SCORE, capacity)
