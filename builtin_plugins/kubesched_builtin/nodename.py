"""NodeName: a pod with ``spec.nodeName`` fits only the node of that name (Filter)."""

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
    Status,
    hookimpl,
)
from kubesched.api import Pod
from kubesched_builtin import signers
from kubesched_builtin.names import NODE_NAME

NAME = NODE_NAME

ERR_REASON = "node(s) didn't match the requested node name"

_NAMES_KEY = (NAME, "names")


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    """Whether ``pod`` may run on ``node_info``: it names no node, or this one."""
    wanted = pod.spec.node_name
    return not wanted or wanted == node_info.name


def _names_column(table: NodeTable) -> np.ndarray:
    return np.array(table.names, dtype=object)


class NodeName:
    """Rejects every node but the one named by ``spec.nodeName``
    (UnschedulableAndUnresolvable: preemption cannot change a name)."""

    name = NAME
    filter_depends_only_on_node = True
    """Filter reads the Node and the pod, never the pods on the node (preemption skips it)."""

    def __init__(self, args: Any, handle: Any) -> None:
        self._handle = handle

    @hookimpl
    def sign_pod(self, pod: Pod, pod_info: PodInfo) -> list[tuple[str, Any]]:
        """Only ``spec.nodeName`` decides."""
        return [(signers.NODE_NAME, pod.spec.node_name or "")]

    @hookimpl
    def filter(self, pod: Pod, node_info: NodeInfo) -> Status | None:
        if fits(pod, node_info):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)

    @hookimpl
    def filter_nodes(self, pod: Pod, nodes: NodeBatch) -> Sequence[Status | None] | None:
        wanted = pod.spec.node_name
        if not wanted:
            return None  # no node asked for: every node passes
        names = nodes.table.derived(_NAMES_KEY, _names_column)[nodes.rows]
        other = names != wanted
        if not other.any():
            return None
        out = np.full(len(nodes), None, dtype=object)
        out[other] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)
        return out

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # No hint: a new node is always worth a retry (upstream's choice).
        return [ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD))]
