"""PodTopologySpread: spread pods over topology domains (upstream ``podtopologyspread``)."""

from .filtering import ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH
from .plugin import (
    LIST_DEFAULTING,
    NAME,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    DefaultConstraint,
    PodTopologySpread,
    PodTopologySpreadArgs,
)

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "LIST_DEFAULTING",
    "NAME",
    "SYSTEM_DEFAULTING",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "DefaultConstraint",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
]
