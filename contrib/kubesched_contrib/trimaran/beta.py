"""The beta distribution LowRiskOverCommitment fits to a node's measured load.

Upstream (``pkg/trimaran/lowriskovercommitment/beta.go``) matches a beta distribution to
the load's mean and variance and reads the probability that the load stays below a
threshold from its distribution function, the regularised incomplete beta function
``I_x(a, b)`` (gonum's ``RegIncBeta``). It is computed here with the continued fraction
of Numerical Recipes (modified Lentz), accurate to about 1e-14.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["BetaDistribution", "compute_probability", "max_variance", "regularized_incomplete"]

_EPS = 1e-15
_TINY = 1e-300
_MAX_ITERATIONS = 300


def _continued_fraction(x: float, a: float, b: float) -> float:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = _TINY if abs(d) < _TINY else d
    d = 1.0 / d
    h = d
    for m in range(1, _MAX_ITERATIONS + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = _TINY if abs(d) < _TINY else d
        c = 1.0 + aa / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = _TINY if abs(d) < _TINY else d
        c = 1.0 + aa / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return h


def regularized_incomplete(x: float, a: float, b: float) -> float:
    """``I_x(a, b)`` for ``a, b > 0`` and ``x`` in [0, 1]; NaN outside that domain."""
    if a <= 0 or b <= 0 or not 0 <= x <= 1:
        return math.nan
    if x == 0:
        return 0.0
    if x == 1:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    # The continued fraction converges fast only below the mean; use the symmetry
    # I_x(a, b) = 1 - I_{1-x}(b, a) above it.
    if x < (a + 1) / (a + b + 2):
        return front * _continued_fraction(x, a, b) / a
    return 1.0 - front * _continued_fraction(1.0 - x, b, a) / b


def max_variance(mean: float) -> float:
    """Upstream ``GetMaxVariance``: the largest variance of a beta distribution with
    this mean, ``mean × (1 - mean)`` (0 outside (0, 1))."""
    return mean * (1 - mean) if 0 < mean < 1 else 0.0


@dataclass(frozen=True, slots=True)
class BetaDistribution:
    """A beta distribution with shape parameters ``alpha, beta > 0``."""

    alpha: float
    beta: float

    @classmethod
    def matching(cls, m1: float, m2: float) -> BetaDistribution | None:
        """Upstream ``MatchMoments``: the distribution with first moment ``m1`` and
        second moment ``m2``; None when no beta distribution has them."""
        variance = m2 - m1 * m1
        if m1 < 0 or m1 > 1 or variance < 0 or variance >= m1 * (1 - m1):
            return None
        temp = max((m1 * (1 - m1) / variance) - 1, 5e-324)
        alpha, beta = m1 * temp, (1 - m1) * temp
        return cls(alpha, beta) if alpha > 0 and beta > 0 else None

    def cdf(self, x: float) -> float:
        """``P(X <= x)``; 0 where it is not a probability (as upstream)."""
        p = regularized_incomplete(x, self.alpha, self.beta)
        return 0.0 if math.isnan(p) or p < 0 or p > 1 else p


def compute_probability(
    mu: float, sigma: float, threshold: float
) -> tuple[float, BetaDistribution | None]:
    """Upstream ``ComputeProbability``: the probability that a load with mean ``mu`` and
    standard deviation ``sigma`` stays at or below ``threshold``, and the distribution
    fitted (None when none was needed or none fits)."""
    if mu == 0 or (sigma == 0 and mu <= threshold):
        return 1.0, None
    if sigma == 0 and mu > threshold:
        return 0.0, None
    dist = BetaDistribution.matching(mu, sigma * sigma + mu * mu)
    if dist is None:
        return 0.0, None
    below = dist.cdf(threshold)
    return (1.0, dist) if math.isnan(below) else (below, dist)
