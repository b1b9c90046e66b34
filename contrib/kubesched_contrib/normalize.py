"""Score normalisation shared by contrib plugins whose raw score is a cost."""

from __future__ import annotations

import numpy as np

from kubesched import MAX_NODE_SCORE, NodeScores

__all__ = ["reverse_min_max"]


def reverse_min_max(scores: NodeScores) -> None:
    """Rescale costs in place so that the cheapest node gets 100 and the dearest 0.

    scheduler-plugins' NetworkOverhead and Peaks ``NormalizeScore``: with ``lo``/``hi``
    the smallest/largest cost, each becomes ``100 - trunc(100 × (cost - lo) / (hi - lo))``;
    when every cost is equal it becomes ``100 - (cost - lo)``, i.e. 100; when every cost
    is 0 the scores stay 0 (upstream returns early).
    """
    values = scores.values
    if len(values) == 0:
        return
    lo, hi = int(values.min()), int(values.max())
    if lo == 0 and hi == 0:
        return
    if hi != lo:
        # float64 as upstream, truncated toward zero by the int64 conversion.
        norm = np.trunc(MAX_NODE_SCORE * (values - lo).astype(np.float64) / float(hi - lo))
        values[:] = MAX_NODE_SCORE - norm.astype(np.int64)
    else:
        values[:] = MAX_NODE_SCORE - (values - lo)
