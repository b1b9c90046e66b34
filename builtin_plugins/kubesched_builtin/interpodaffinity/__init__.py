"""InterPodAffinity: pod affinity and anti-affinity (upstream ``plugins/interpodaffinity``)."""

from .filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)
from .plugin import NAME, InterPodAffinity, InterPodAffinityArgs

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "NAME",
    "InterPodAffinity",
    "InterPodAffinityArgs",
]
