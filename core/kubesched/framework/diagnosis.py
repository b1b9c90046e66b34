"""Why a pod fits no node: per-node statuses, rejecting plugins and upstream's FitError message."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kubesched.framework.status import Code, Status

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
"""Upstream's ``NoNodeAvailableMsg``."""
NO_NODES_AVAILABLE_ERROR = "no nodes available to schedule pods"
"""Upstream's ``ErrNoNodesAvailable``."""


@dataclass
class Diagnosis:
    """What the filters said about the nodes of one scheduling attempt.

    ``node_to_status`` holds the status of every node a filter rejected explicitly;
    nodes absent from it have ``absent_nodes_status`` when it is set (a PreFilter
    rejection or narrowing applies to every such node). ``unschedulable_plugins`` and
    ``pending_plugins`` are the plugins that rejected the pod: the queue moves it back
    only on events they registered.
    """

    node_to_status: dict[str, Status] = field(default_factory=dict)
    absent_nodes_status: Status | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_plugin_status(self, status: Status) -> None:
        """Count ``status``'s plugin among the rejecting (or pending) plugins."""
        if not status.plugin:
            return
        if status.code is Code.PENDING:
            self.pending_plugins.add(status.plugin)
        elif status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)

    def status_of(self, node_name: str) -> Status | None:
        """The status recorded for ``node_name`` (explicit, else the absent-nodes one)."""
        return self.node_to_status.get(node_name, self.absent_nodes_status)


class FitError(Exception):
    """The pod fits no node. ``str()`` is upstream's FitError message, e.g.
    ``0/6 nodes are available: 2 Insufficient cpu, 4 node(s) had untolerated taint
    {dedicated: gpu}. preemption: ...``."""

    def __init__(self, pod_key: str, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod_key = pod_key
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        d = self.diagnosis
        msg = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            # When PreFilter rejected, every node carries the same status; listing them
            # would repeat the PreFilter message, so upstream only counts after Filter.
            reasons: Counter[str] = Counter()
            for status in d.node_to_status.values():
                reasons.update(status.reasons)
            absent = self.num_all_nodes - len(d.node_to_status)
            if absent > 0 and d.absent_nodes_status is not None:
                for reason in d.absent_nodes_status.reasons:
                    reasons[reason] += absent
            # Upstream sorts the "N reason" strings as strings, so "10 x" precedes "2 y".
            histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
            if histogram:
                msg += f" {', '.join(histogram)}."
        if d.post_filter_msg:
            # Upstream appends the PostFilter message as it is ("%v", no separator period):
            # DefaultPreemption's messages end with their own period.
            msg += f" {d.post_filter_msg}"
        return msg
