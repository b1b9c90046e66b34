"""Go's integer arithmetic, for scores that must equal upstream's to the unit.

Upstream computes scores in int64: division truncates toward zero and ``math.Round``
rounds halves away from zero, where Python's ``//`` floors and ``round`` rounds halves
to even. Plugins porting an upstream formula use these (and their numpy forms in
vectorised hooks) to get the same integers.

Resource amounts are int64 upstream too. kubesched saturates them instead of letting
them wrap: a quantity or a sum beyond the int64 range is held at ``INT64_MAX`` (or
``INT64_MIN``), as apimachinery's ``AsScaledInt64`` saturates, so that an amount too
large to count can never turn into a small or negative one (a node that looks empty).
The ``sat_*`` and :func:`mul_div_array` helpers give upstream's result wherever Go's
int64 arithmetic does not overflow, and the saturated exact result where it would.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "go_div",
    "go_div_array",
    "go_round",
    "go_round_array",
    "mul_div_array",
    "sat_add_array",
    "sat_sub_array",
    "saturate",
]

INT64_MAX = 2**63 - 1
"""Go's ``math.MaxInt64``."""
INT64_MIN = -(2**63)
"""Go's ``math.MinInt64``."""


def go_div(a: int, b: int) -> int:
    """``a / b`` for Go int64: the quotient truncated toward zero (``b != 0``)."""
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def go_div_array(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`go_div` element-wise on int64 arrays (``b`` nowhere zero)."""
    # numpy floors; truncation differs by one where the signs differ and it is not
    # exact. (Not through abs(): abs(INT64_MIN) overflows.)
    q = a // b
    return q + (((a % b) != 0) & ((a < 0) != (b < 0)))


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


def saturate(x: int) -> int:
    """``x`` held within int64: ``INT64_MAX`` above it, ``INT64_MIN`` below."""
    return INT64_MAX if x > INT64_MAX else INT64_MIN if x < INT64_MIN else x


def sat_add_array(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """``a + b`` on int64 arrays (``b`` may be an int in the int64 range), saturated
    where the sum leaves int64 instead of wrapping."""
    b = np.asarray(b, dtype=np.int64)
    total = a + b
    # Two's complement: the sum overflowed where both operands' signs differ from its.
    over = ((a ^ total) & (b ^ total)) < 0
    if over.any():
        total = np.where(over, np.where(a < 0, INT64_MIN, INT64_MAX), total)
    return total


def sat_sub_array(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """``a - b`` on int64 arrays (``b`` may be an int in the int64 range), saturated
    where the difference leaves int64 instead of wrapping."""
    b = np.asarray(b, dtype=np.int64)
    diff = a - b
    # Overflow only where the operands' signs differ and the result's sign is b's.
    over = ((a ^ b) & (a ^ diff)) < 0
    if over.any():
        diff = np.where(over, np.where(a < 0, INT64_MIN, INT64_MAX), diff)
    return diff


def mul_div_array(a: np.ndarray, m: int, b: np.ndarray) -> np.ndarray:
    """Go's ``a * m / b`` element-wise (int64 arrays ``a`` and ``b``, ``b`` > 0 everywhere
    as a capacity is, ``m`` > 0), computed exactly where the int64 product would overflow and
    saturated to int64: scores such as ``(capacity - requested) * 100 / capacity``
    stay in their range for any capacity."""
    limit = INT64_MAX // m
    big = (a > limit) | (a < -limit)
    if not big.any():
        return go_div_array(a * m, b)
    out = go_div_array(np.where(big, 0, a) * m, b)
    # The few rows whose product leaves int64 (amounts beyond 10^16 or so): exact
    # Python integers, once per row.
    at = np.flatnonzero(big)
    out[at] = [
        saturate(go_div(x * m, y)) for x, y in zip(a[at].tolist(), b[at].tolist(), strict=True)
    ]
    return out
