"""The scheduling framework: extension points, statuses, cycle state, plugin discovery, runtime."""

from kubesched.framework.args import PluginArgs
from kubesched.framework.cycle_state import (
    PODS_TO_ACTIVATE_KEY,
    CycleState,
    PodsToActivate,
    StateData,
    StateKey,
)
from kubesched.framework.events import (
    WILDCARD_EVENT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kubesched.framework.plugin import (
    EXTENSION_POINTS,
    ExtensionPoint,
    hookimpl,
    hookspec,
)
from kubesched.framework.registry import (
    ENTRY_POINT_GROUP,
    PluginEntry,
    PluginLoadError,
    PluginRegistry,
    default_registry,
)
from kubesched.framework.results import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NodeScores,
    Placement,
    PodGroupAssignments,
    PostFilterResult,
    PreFilterResult,
    default_normalize_score,
)
from kubesched.framework.status import Code, Status

__all__ = [
    "ENTRY_POINT_GROUP",
    "EXTENSION_POINTS",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "PODS_TO_ACTIVATE_KEY",
    "WILDCARD_EVENT",
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "EventResource",
    "ExtensionPoint",
    "NodeScores",
    "Placement",
    "PluginArgs",
    "PluginEntry",
    "PluginLoadError",
    "PluginRegistry",
    "PodGroupAssignments",
    "PodsToActivate",
    "PostFilterResult",
    "PreFilterResult",
    "QueueingHint",
    "StateData",
    "StateKey",
    "Status",
    "default_normalize_score",
    "default_registry",
    "hookimpl",
    "hookspec",
]
