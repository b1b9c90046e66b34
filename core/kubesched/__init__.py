"""kubesched: the Kubernetes scheduler as a Python plugin framework.

Plugin authors import what they need from here (and test helpers from
``kubesched.testing``); nothing deeper is part of the public API.
"""

from kubesched.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    PODS_TO_ACTIVATE_KEY,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    NodeScores,
    PluginArgs,
    PodsToActivate,
    PostFilterResult,
    PreFilterResult,
    QueueingHint,
    StateData,
    StateKey,
    Status,
    default_normalize_score,
    hookimpl,
)
from kubesched.framework.node_table import NodeTable
from kubesched.framework.types import (
    AffinityTerm,
    HostPort,
    NodeBatch,
    NodeInfo,
    PodInfo,
    QueuedPodInfo,
    Resource,
    WeightedAffinityTerm,
)

__version__ = "0.1.0"

__all__ = [
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "PODS_TO_ACTIVATE_KEY",
    "ActionType",
    "AffinityTerm",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "EventResource",
    "HostPort",
    "NodeBatch",
    "NodeInfo",
    "NodeScores",
    "NodeTable",
    "PluginArgs",
    "PodInfo",
    "PodsToActivate",
    "PostFilterResult",
    "PreFilterResult",
    "QueuedPodInfo",
    "QueueingHint",
    "Resource",
    "StateData",
    "StateKey",
    "Status",
    "WeightedAffinityTerm",
    "__version__",
    "default_normalize_score",
    "hookimpl",
]
