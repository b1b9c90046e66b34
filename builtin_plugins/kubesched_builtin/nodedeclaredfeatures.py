"""NodeDeclaredFeatures: a pod that needs a node feature fits only nodes declaring it
(PreFilter, Filter)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kubesched import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    NodeBatch,
    NodeInfo,
    PodInfo,
    QueueingHint,
    StateKey,
    Status,
    hookimpl,
)
from kubesched.api import Node, Pod, PodSpec
from kubesched_builtin import signers
from kubesched_builtin.names import NODE_DECLARED_FEATURES

NAME = NODE_DECLARED_FEATURES

GATE = "NodeDeclaredFeatures"
"""The feature gate that turns the plugin on (beta, on by default in v1.36); with it off
the plugin is out of the default profile, and does nothing where a profile enables it."""

ERR_REASON_UNSATISFIED = "node(s) didn't match Pod's required features"
"""Filter reason: the node does not declare every feature the pod needs."""

PRE_FILTER_KEY: StateKey[frozenset[str]] = StateKey("PreFilter" + NAME)
"""The features the pod needs (never empty: a pod needing none skips the Filter)."""

_SETS_KEY = (NAME, "declared-sets")


def _restarts_all_containers(spec: PodSpec) -> bool:
    return any(
        rule.action == "RestartAllContainers"
        for c in (*spec.containers, *spec.init_containers)
        for rule in c.restart_policy_rules
    )


def _host_network_in_user_namespace(spec: PodSpec) -> bool:
    return spec.host_network and spec.host_users is False


POD_FEATURES: dict[str, Callable[[PodSpec], bool]] = {
    "RestartAllContainersOnContainerExits": _restarts_all_containers,
    "UserNamespacesHostNetworkSupport": _host_network_in_user_namespace,
}
"""Each node feature of kube-scheduler v1.36 that a pod's spec can make it need at
scheduling time, with the test that says so (upstream's ``InferForScheduling`` of
k8s.io/component-helpers/nodedeclaredfeatures). The other declared features of v1.36
(in-place resize of pod-level resources and of init containers, WebSockets to the
kubelet) matter only to updates of a running pod, never to where it is placed."""


def required_features(pod: Pod) -> frozenset[str]:
    """The node features ``pod`` needs, by name."""
    return frozenset(name for name, needs in POD_FEATURES.items() if needs(pod.spec))


def node_declares(node: Node | None, features: frozenset[str]) -> bool:
    """Whether ``node`` declares every one of ``features`` in ``status.declaredFeatures``
    (names it declares that kube-scheduler does not know are ignored)."""
    declared = node.status.declared_features if node is not None else ()
    return features.issubset(declared)


def _declared(node_info: NodeInfo) -> frozenset[str]:
    node = node_info.node
    return frozenset(node.status.declared_features if node is not None else ())


def is_schedulable_after_node_change(pod: Pod, old_obj: Node | None, new_obj: Node) -> QueueingHint:
    """Queue for a new node, or a node whose declared features changed."""
    if old_obj is not None and list(old_obj.status.declared_features) == list(
        new_obj.status.declared_features
    ):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def is_schedulable_after_pod_update(pod: Pod, old_obj: Pod, new_obj: Pod) -> QueueingHint:
    """Queue when the rejected pod's own update changed the features it needs."""
    same = (old_obj.metadata.namespace, old_obj.metadata.name) == (
        pod.metadata.namespace,
        pod.metadata.name,
    )
    if same and required_features(old_obj) != required_features(new_obj):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


class NodeDeclaredFeatures:
    """Rejects a node that does not declare (``status.declaredFeatures``) every feature
    the pod's spec needs (UnschedulableAndUnresolvable: preemption cannot add a feature).
    A pod needing none skips the Filter, and so does every pod while the
    ``NodeDeclaredFeatures`` gate is off."""

    name = NAME
    filter_depends_only_on_node = True
    """Filter reads the Node and the pod, never the pods on the node (preemption skips it)."""

    def __init__(self, args: Any, handle: Any) -> None:
        self._handle = handle
        self._enabled = handle.feature_enabled(GATE)

    @hookimpl
    def sign_pod(self, pod: Pod, pod_info: PodInfo) -> list[tuple[str, Any]]:
        """Only the features the pod's spec needs decide."""
        return [(signers.FEATURES, sorted(required_features(pod)) if self._enabled else [])]

    @hookimpl
    def pre_filter(self, state: CycleState, pod: Pod) -> Status | None:
        needed = required_features(pod) if self._enabled else frozenset()
        if not needed:
            return Status.skip()
        state.write(PRE_FILTER_KEY, needed)
        return None

    @hookimpl
    def filter(self, state: CycleState, node_info: NodeInfo) -> Status | None:
        if not self._enabled or node_declares(node_info.node, state.read(PRE_FILTER_KEY)):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSATISFIED)

    @hookimpl
    def filter_nodes(self, state: CycleState, nodes: NodeBatch) -> Sequence[Status | None] | None:
        if not self._enabled:
            return None
        needed = state.read(PRE_FILTER_KEY)
        # Clusters have few distinct lists (one per kubelet version and configuration).
        ids, firsts = nodes.table.grouped(_SETS_KEY, _declared)
        lacking = np.fromiter(
            (not needed.issubset(_declared(ni)) for ni in firsts), dtype=bool, count=len(firsts)
        )
        rejected = lacking[ids[nodes.rows]]
        if not rejected.any():
            return None
        out = np.full(len(nodes), None, dtype=object)
        out[rejected] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSATISFIED)
        return out

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self._enabled:
            return []
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE
                ),
                is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE),
                is_schedulable_after_pod_update,
            ),
        ]
