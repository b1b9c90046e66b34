"""Toleration/taint matching with upstream's ``ToleratesTaint`` semantics."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from .core import Taint, Toleration

__all__ = [
    "find_untolerated_taint",
    "toleration_tolerates_taint",
    "tolerations_tolerate_taint",
]


def toleration_tolerates_taint(tol: Toleration, taint: Taint) -> bool:
    """Whether ``tol`` tolerates ``taint`` (``v1.Toleration.ToleratesTaint``).

    An empty effect matches every effect; an empty key matches every key (valid only
    with Exists, but upstream does not check that here); Exists ignores the value;
    Equal, or an empty operator, compares values; any other operator tolerates nothing.
    """
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    op = tol.operator
    if not op or op == "Equal":
        return (tol.value or "") == (taint.value or "")
    return op == "Exists"


def tolerations_tolerate_taint(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """Whether any of ``tolerations`` tolerates ``taint``."""
    return any(toleration_tolerates_taint(t, taint) for t in tolerations)


def find_untolerated_taint(
    taints: Iterable[Taint], tolerations: Collection[Toleration], effects: Collection[str]
) -> Taint | None:
    """The first taint with an effect in ``effects`` that no toleration tolerates, or None.

    ``FindMatchingUntoleratedTaint`` with a filter on the effect, e.g.
    ``{"NoSchedule", "NoExecute"}`` for TaintToleration's Filter.
    """
    for taint in taints:
        if taint.effect in effects and not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None
