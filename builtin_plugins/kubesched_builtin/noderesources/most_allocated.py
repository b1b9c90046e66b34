"""The MostAllocated scoring strategy of NodeResourcesFit (upstream ``most_allocated.go``).

Per resource ``requested * 100 / allocatable`` with ``requested`` capped at
``allocatable`` (pods without requests count with defaults, so the sum can exceed it),
then the weighted average over the resources the node has, in int64 division.
"""

from __future__ import annotations

import numpy as np

from kubesched import MAX_NODE_SCORE

from .resource_allocation import WeightedAverageScorer, go_div, go_div_array


def most_requested_score(requested: int, capacity: int) -> int:
    """The used share of ``capacity`` on 0..100 (upstream ``mostRequestedScore``)."""
    if capacity == 0:
        return 0
    requested = min(requested, capacity)
    return go_div(requested * MAX_NODE_SCORE, capacity)


class MostAllocatedScorer(WeightedAverageScorer):
    """Favours nodes with more requested capacity (bin packing)."""

    def resource_score(self, requested: int, capacity: int) -> int:
        """``most_requested_score``."""
        return most_requested_score(requested, capacity)

    def resource_score_columns(self, requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """``most_requested_score`` for many nodes."""
        return go_div_array(np.minimum(requested, capacity) * MAX_NODE_SCORE, capacity)
