"""Toleration/taint matching with upstream's ``ToleratesTaint`` semantics."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from .core import Taint, Toleration

__all__ = [
    "find_untolerated_taint",
    "toleration_tolerates_taint",
    "tolerations_tolerate_taint",
]


_INT64 = range(-(2**63), 2**63)


def _decimal_int64(text: str) -> int | None:
    """``text`` as an int64 when it is a decimal integer in canonical form (no sign but
    ``-``, no leading zero, not ``-0``: apimachinery's ``IsDecimalInteger``), else None."""
    digits = text.removeprefix("-")
    if not digits.isascii() or not digits.isdigit():
        return None
    if digits[0] == "0" and text != "0":
        return None
    value = int(text)
    return value if value in _INT64 else None


def toleration_tolerates_taint(
    tol: Toleration, taint: Taint, *, comparison_operators: bool = False
) -> bool:
    """Whether ``tol`` tolerates ``taint`` (``v1.Toleration.ToleratesTaint``).

    An empty effect matches every effect; an empty key matches every key (valid only
    with Exists, but upstream does not check that here); Exists ignores the value;
    Equal, or an empty operator, compares values. ``Gt`` and ``Lt`` tolerate a taint
    whose value is an integer greater (less) than the toleration's, and only with
    ``comparison_operators`` (the ``TaintTolerationComparisonOperators`` gate); a value
    that is not a canonical int64 tolerates nothing. Any other operator tolerates nothing.
    """
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    op = tol.operator
    if not op or op == "Equal":
        return (tol.value or "") == (taint.value or "")
    if op in ("Gt", "Lt"):
        if not comparison_operators:
            return False
        wanted, actual = _decimal_int64(tol.value or ""), _decimal_int64(taint.value or "")
        if wanted is None or actual is None:
            return False
        return actual > wanted if op == "Gt" else actual < wanted
    return op == "Exists"


def tolerations_tolerate_taint(
    tolerations: Iterable[Toleration], taint: Taint, *, comparison_operators: bool = False
) -> bool:
    """Whether any of ``tolerations`` tolerates ``taint`` (``comparison_operators`` as in
    :func:`toleration_tolerates_taint`)."""
    return any(
        toleration_tolerates_taint(t, taint, comparison_operators=comparison_operators)
        for t in tolerations
    )


def find_untolerated_taint(
    taints: Iterable[Taint],
    tolerations: Collection[Toleration],
    effects: Collection[str],
    *,
    comparison_operators: bool = False,
) -> Taint | None:
    """The first taint with an effect in ``effects`` that no toleration tolerates, or None.

    ``FindMatchingUntoleratedTaint`` with a filter on the effect, e.g.
    ``{"NoSchedule", "NoExecute"}`` for TaintToleration's Filter; ``comparison_operators``
    as in :func:`toleration_tolerates_taint`.
    """
    for taint in taints:
        if taint.effect in effects and not tolerations_tolerate_taint(
            tolerations, taint, comparison_operators=comparison_operators
        ):
            return taint
    return None
