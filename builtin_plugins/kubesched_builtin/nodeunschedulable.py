"""NodeUnschedulable: reject cordoned nodes (``spec.unschedulable``) unless tolerated (Filter)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    EventResource,
    NodeBatch,
    NodeInfo,
    NodeTable,
    PodInfo,
    QueueingHint,
    Status,
    hookimpl,
)
from kubesched.api import Node, Pod, Taint, tolerations_tolerate_taint
from kubesched_builtin import signers
from kubesched_builtin.names import NODE_UNSCHEDULABLE

NAME = NODE_UNSCHEDULABLE

ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
"""Upstream keeps this reason; we return it for a NodeInfo without a Node object."""
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule")
"""A pod tolerating this taint also tolerates ``spec.unschedulable`` (what ``kubectl
cordon`` sets, and the node lifecycle controller mirrors as this taint)."""

_COLUMN_KEY = (NAME, "unschedulable")


def tolerates_unschedulable(pod: Pod) -> bool:
    """Whether ``pod`` tolerates ``node.kubernetes.io/unschedulable:NoSchedule``."""
    return tolerations_tolerate_taint(pod.spec.tolerations, UNSCHEDULABLE_TAINT)


_SCHEDULABLE, _UNSCHEDULABLE, _NO_NODE = 0, 1, 2


def _node_state_column(table: NodeTable) -> np.ndarray:
    # Per node: schedulable, cordoned, or no Node object (a deleted node with pods left).
    return np.fromiter(
        (_NO_NODE if ni.node is None else int(ni.node.spec.unschedulable) for ni in table.infos),
        dtype=np.int8,
        count=len(table.infos),
    )


def _same_pod(a: Pod, b: Pod) -> bool:
    ma, mb = a.metadata, b.metadata
    if ma.uid or mb.uid:
        return ma.uid == mb.uid
    return (ma.namespace, ma.name) == (mb.namespace, mb.name)


def is_schedulable_after_node_change(pod: Pod, old_obj: Node | None, new_obj: Node) -> QueueingHint:
    """Queue when a node is added schedulable or changes from unschedulable to schedulable."""
    if new_obj.spec.unschedulable:
        return QueueingHint.SKIP
    if old_obj is None or old_obj.spec.unschedulable:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_pod_toleration_change(
    pod: Pod, old_obj: Pod | None, new_obj: Pod
) -> QueueingHint:
    """Queue when the rejected pod itself now tolerates the unschedulable taint.

    The old tolerations need no check: tolerations can only be added, and a pod that
    already tolerated the taint was not rejected by this plugin.
    """
    if _same_pod(pod, new_obj) and tolerates_unschedulable(new_obj):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


class NodeUnschedulable:
    """Filters out nodes with ``spec.unschedulable: true`` for pods that do not tolerate
    ``node.kubernetes.io/unschedulable:NoSchedule`` (UnschedulableAndUnresolvable)."""

    name = NAME
    filter_depends_only_on_node = True
    """Filter reads the Node and the pod, never the pods on the node (preemption skips it)."""

    def __init__(self, args: Any, handle: Any) -> None:
        self._handle = handle

    @hookimpl
    def sign_pod(self, pod: Pod, pod_info: PodInfo) -> list[tuple[str, Any]]:
        """The node's ``unschedulable`` taint is tolerated or not."""
        return [signers.tolerations(pod)]

    @hookimpl
    def filter(self, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNKNOWN_CONDITION)
        if not node.spec.unschedulable or tolerates_unschedulable(pod):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE)

    @hookimpl
    def filter_nodes(self, pod: Pod, nodes: NodeBatch) -> Sequence[Status | None] | None:
        state = nodes.table.derived(_COLUMN_KEY, _node_state_column)[nodes.rows]
        if not state.any():
            return None  # every node schedulable (_SCHEDULABLE is 0)
        out = np.full(len(nodes), None, dtype=object)
        if not tolerates_unschedulable(pod):
            cordoned = state == _UNSCHEDULABLE
            if cordoned.any():
                out[cordoned] = Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE
                )
        # A NodeInfo without a Node never reaches a snapshot's list; answer as the
        # per-node hook does anyway, so that both paths agree on any input.
        missing = state == _NO_NODE
        if missing.any():
            out[missing] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNKNOWN_CONDITION)
        return out

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATIONS),
                is_schedulable_after_pod_toleration_change,
            ),
        ]
