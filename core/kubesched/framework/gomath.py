"""Go's integer arithmetic, for scores that must equal upstream's to the unit.

Upstream computes scores in int64: division truncates toward zero and ``math.Round``
rounds halves away from zero, where Python's ``//`` floors and ``round`` rounds halves
to even. Plugins porting an upstream formula use these (and their numpy forms in
vectorised hooks) to get the same integers.
"""

from __future__ import annotations

import numpy as np

__all__ = ["go_div", "go_div_array", "go_round", "go_round_array"]


def go_div(a: int, b: int) -> int:
    """``a / b`` for Go int64: the quotient truncated toward zero (``b != 0``)."""
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def go_div_array(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`go_div` element-wise on int64 arrays (``b`` nowhere zero)."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def go_round(x: float) -> int:
    """Go's ``int64(math.Round(x))``: to the nearest integer, halves away from zero."""
    t = float(int(x))  # truncation toward zero, exact for a double
    if abs(x - t) >= 0.5:
        t += 1.0 if x > 0 else -1.0
    return int(t)


def go_round_array(x: np.ndarray) -> np.ndarray:
    """:func:`go_round` element-wise (float64 in, int64 out)."""
    t = np.trunc(x)
    return (t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0.0)).astype(np.int64)
