"""The scheduler extender v1 protocol's messages (k8s.io/kube-scheduler/extender/v1), typed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kubesched.api import Node, Pod

MAX_EXTENDER_PRIORITY = 10
"""The highest score an extender gives a node (upstream ``MaxExtenderPriority``); the
scheduler scales it to its own 0-100 range."""


class ExtenderError(Exception):
    """An extender call failed (transport, HTTP status, an ``Error`` in the answer, or an
    answer that contradicts the question); the message is upstream's where it has one."""


@dataclass
class ExtenderFilterResult:
    """What Filter answers: the nodes that pass, and why the others do not.

    ``node_names`` lists the nodes that pass (``None`` or empty: none passes).
    ``failed_nodes`` are rejected with ``Unschedulable`` (preemption may help),
    ``failed_and_unresolvable_nodes`` with ``UnschedulableAndUnresolvable`` (it cannot);
    the latter wins for a node in both. A non-empty ``error`` fails the call.
    """

    node_names: list[str] | None = None
    failed_nodes: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable_nodes: dict[str, str] = field(default_factory=dict)
    error: str = ""


@dataclass
class HostPriority:
    """One node's score from Prioritize: 0 to ``MAX_EXTENDER_PRIORITY``."""

    host: str
    score: int


@dataclass
class Victims:
    """The pods preemption would evict on one node, and how many PDBs that violates."""

    pods: list[Pod]
    num_pdb_violations: int = 0


@dataclass
class MetaVictims:
    """``Victims`` by pod UID: what an extender answers to a preemption call."""

    pod_uids: list[str]
    num_pdb_violations: int = 0


@dataclass
class ExtenderBindingArgs:
    """The pod to bind and the node chosen for it."""

    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


@runtime_checkable
class InProcessExtender(Protocol):
    """What an in-process extender (entry point group ``kubesched.extenders``) implements.

    Only the methods whose verb is set in the configuration are called; the verbs'
    values do not matter in-process. Raising fails the call as an HTTP error would
    (an ``ignorable`` extender is then passed over).
    """

    def filter(self, pod: Pod, nodes: Sequence[Node]) -> ExtenderFilterResult:
        """The nodes of ``nodes`` where ``pod`` may run (called when ``filterVerb`` is set)."""
        ...

    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> Sequence[HostPriority]:
        """Scores 0-10 of ``nodes`` for ``pod`` (called when ``prioritizeVerb`` is set)."""
        ...

    def preempt(
        self, pod: Pod, node_to_victims: Mapping[str, Victims]
    ) -> Mapping[str, MetaVictims]:
        """The preemption candidates kept, with their victims (``preemptVerb``)."""
        ...

    def bind(self, args: ExtenderBindingArgs) -> None:
        """Bind the pod to the node (``bindVerb``); raise when that fails."""
        ...


def field_of(data: Mapping[str, Any], name: str) -> Any:
    """``data[name]`` matched as Go's encoding/json matches a field: exactly, else
    case-insensitively (extenders answer ``NodeNames`` or ``nodenames`` alike)."""
    if name in data:
        return data[name]
    lowered = name.lower()
    for key, value in data.items():
        if key.lower() == lowered:
            return value
    return None
