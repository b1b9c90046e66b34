"""The framework runtime: running one profile's plugins at every extension point."""

from kubesched.framework.runtime.framework import (
    Framework,
    FrameworkError,
    PluginRunner,
    PluginScore,
    ScoreResult,
)
from kubesched.framework.runtime.waiting_pods import (
    MAX_PERMIT_TIMEOUT,
    PERMIT_WAIT_REASON,
    WaitingPod,
    WaitingPods,
)

__all__ = [
    "MAX_PERMIT_TIMEOUT",
    "PERMIT_WAIT_REASON",
    "Framework",
    "FrameworkError",
    "PluginRunner",
    "PluginScore",
    "ScoreResult",
    "WaitingPod",
    "WaitingPods",
]
