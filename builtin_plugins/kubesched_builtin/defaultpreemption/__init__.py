"""DefaultPreemption: the PostFilter plugin that preempts lower-priority pods; its evaluator."""

from kubesched_builtin.defaultpreemption.evaluator import (
    PREEMPTION_EXPLANATION_KEY,
    Candidate,
    CandidateExplanation,
    Evaluator,
    PDBView,
    PreemptionExplanation,
    PreemptionInterface,
    filter_pods_with_pdb_violation,
    pick_one_node_for_preemption,
)
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
    "PREEMPTION_EXPLANATION_KEY",
    "Candidate",
    "CandidateExplanation",
    "DefaultPreemption",
    "DefaultPreemptionArgs",
    "Evaluator",
    "PDBView",
    "PreemptionExplanation",
    "PreemptionInterface",
    "filter_pods_with_pdb_violation",
    "pick_one_node_for_preemption",
]
