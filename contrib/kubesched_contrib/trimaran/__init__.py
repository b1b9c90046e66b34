"""Trimaran: load-aware scoring from measured node utilisation (scheduler-plugins' family).

TargetLoadPacking lives in ``kubesched_contrib.targetloadpacking``; all four read node
metrics through :mod:`kubesched_contrib.trimaran.metrics`.
"""

from .loadvariationriskbalancing import LoadVariationRiskBalancing, LoadVariationRiskBalancingArgs
from .lowriskovercommitment import LowRiskOverCommitment, LowRiskOverCommitmentArgs
from .peaks import Peaks, PeaksArgs, PowerModel

__all__ = [
    "LoadVariationRiskBalancing",
    "LoadVariationRiskBalancingArgs",
    "LowRiskOverCommitment",
    "LowRiskOverCommitmentArgs",
    "Peaks",
    "PeaksArgs",
    "PowerModel",
]
