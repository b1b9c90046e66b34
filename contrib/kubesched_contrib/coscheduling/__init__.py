"""Coscheduling (gang scheduling) and its PodGroup kind, after kubernetes-sigs/scheduler-plugins."""

from .api import POD_GROUP_LABEL, PodGroup, PodGroupSpec, PodGroupStatus
from .plugin import NAME, Coscheduling, CoschedulingArgs

__all__ = [
    "NAME",
    "POD_GROUP_LABEL",
    "Coscheduling",
    "CoschedulingArgs",
    "PodGroup",
    "PodGroupSpec",
    "PodGroupStatus",
]
