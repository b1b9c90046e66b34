"""DefaultPreemption: the PostFilter plugin that preempts lower-priority pods.

The evaluator it drives (upstream ``framework/preemption``) is part of the SDK:
``kubesched.Evaluator``, ``kubesched.PreemptionInterface`` and their helpers.
"""

from kubesched_builtin.defaultpreemption.plugin import (
    ERR_REASON_NO_VICTIMS,
    ERR_REASON_PREEMPTION_POLICY_NEVER,
    ERR_REASON_TERMINATING_ON_NOMINATED_NODE,
    NAME,
    DefaultPreemption,
    DefaultPreemptionArgs,
)

__all__ = [
    "ERR_REASON_NO_VICTIMS",
    "ERR_REASON_PREEMPTION_POLICY_NEVER",
    "ERR_REASON_TERMINATING_ON_NOMINATED_NODE",
    "NAME",
    "DefaultPreemption",
    "DefaultPreemptionArgs",
]
