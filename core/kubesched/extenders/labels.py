"""``python://labels``: an in-process scheduler extender driven by node labels, to try
extender configurations (filter, prioritize, preempt, bind) without running a server."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubesched.api import Node, Pod
from kubesched.config.types import Extender as ExtenderConfig
from kubesched.extenders.types import (
    MAX_EXTENDER_PRIORITY,
    ExtenderBindingArgs,
    ExtenderFilterResult,
    HostPriority,
    MetaVictims,
    Victims,
)

REJECT_LABEL = "extender.kubesched.io/reject"
"""A node with this label fails Filter, with the label's value (``-`` for spaces) as the
reason; preemption cannot help."""
UNSCHEDULABLE_LABEL = "extender.kubesched.io/unschedulable"
"""A node with this label fails Filter with ``Unschedulable``: preemption may help."""
SCORE_LABEL = "extender.kubesched.io/score"
"""A node's Prioritize score, 0 to 10 (absent or not a number: 0; out of range: clamped)."""
PROTECTED_LABEL = "extender.kubesched.io/protected"
"""A pod with this label may not be preempted: candidates that would evict it are dropped."""


def _reason(value: str) -> str:
    # Label values cannot hold spaces: "-" stands for one.
    return value.replace("-", " ")


class LabelExtender:
    """Filters, scores and keeps preemption candidates by the nodes' labels; binds every
    pod it is asked to (the scheduler then writes the Binding to the embedded cluster).

    Its verdicts are deterministic and cheap, so that a simulation measures the cost of
    going through the extender protocol itself.
    """

    def __init__(self, config: ExtenderConfig) -> None:
        self.config = config
        self.bound: list[ExtenderBindingArgs] = []
        """Every binding asked for, in order."""

    def filter(self, pod: Pod, nodes: Sequence[Node]) -> ExtenderFilterResult:
        """Nodes without the reject or unschedulable label pass."""
        result = ExtenderFilterResult(node_names=[])
        for node in nodes:
            labels = node.metadata.labels or {}
            name = node.metadata.name
            if REJECT_LABEL in labels:
                result.failed_and_unresolvable_nodes[name] = _reason(labels[REJECT_LABEL])
            elif UNSCHEDULABLE_LABEL in labels:
                result.failed_nodes[name] = _reason(labels[UNSCHEDULABLE_LABEL])
            else:
                result.node_names.append(name)
        return result

    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> list[HostPriority]:
        """Each node's score label, clamped to 0-10."""
        out = []
        for node in nodes:
            value = (node.metadata.labels or {}).get(SCORE_LABEL, "0")
            score = int(value) if value.isdigit() else 0
            out.append(HostPriority(node.metadata.name, min(score, MAX_EXTENDER_PRIORITY)))
        return out

    def preempt(self, pod: Pod, node_to_victims: Mapping[str, Victims]) -> dict[str, MetaVictims]:
        """Every candidate whose victims carry no protected label, victims unchanged."""
        return {
            node: MetaVictims([p.metadata.uid or "" for p in v.pods], v.num_pdb_violations)
            for node, v in node_to_victims.items()
            if not any(PROTECTED_LABEL in (p.metadata.labels or {}) for p in v.pods)
        }

    def bind(self, args: ExtenderBindingArgs) -> None:
        """Accept the binding."""
        self.bound.append(args)
