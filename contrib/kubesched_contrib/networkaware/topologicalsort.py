"""TopologicalSort: queue an AppGroup's pods in its topology order (QueueSort).

Follows kubernetes-sigs/scheduler-plugins ``pkg/networkaware/topologicalsort``: two pods of
the same AppGroup are ordered by their workloads' indexes in the AppGroup's
``status.topologyOrder`` (lower first); any other two pods as PrioritySort orders them
(higher priority first, then earlier queued).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, model_validator

from kubesched import PluginArgs, QueuedPodInfo, hookimpl

from .api import (
    APP_GROUP_KIND,
    AppGroup,
    AppGroupTopologyInfo,
    pod_app_group,
    pod_workload_selector,
)

__all__ = ["NAME", "TopologicalSort", "TopologicalSortArgs", "find_app_group", "find_pod_order"]

NAME = "TopologicalSort"

DEFAULT_NAMESPACES = ("default",)


class TopologicalSortArgs(PluginArgs):
    """``TopologicalSortArgs`` with scheduler-plugins' v1 defaults."""

    namespaces: list[str] = Field(
        default_factory=lambda: list(DEFAULT_NAMESPACES),
        description="Namespaces searched, in order, for a pod's AppGroup; empty means [default].",
    )

    @model_validator(mode="after")
    def _defaults(self) -> TopologicalSortArgs:
        # SetDefaults_TopologicalSortArgs.
        if not self.namespaces:
            object.__setattr__(self, "namespaces", list(DEFAULT_NAMESPACES))
        return self


def find_app_group(lister: Any, namespaces: Sequence[str], name: str) -> AppGroup | None:
    """The AppGroup ``name`` in the first of ``namespaces`` that has one (None if none):
    an AppGroup cannot live in several namespaces at once."""
    if lister is None:
        return None
    for namespace in namespaces:
        found = lister.get_object(APP_GROUP_KIND, namespace, name)
        if found is not None:
            return found
    return None


def find_pod_order(order: Sequence[AppGroupTopologyInfo], selector: str) -> int:
    """Upstream ``FindPodOrder``: the index of ``selector`` in a topology order sorted by
    selector, found by binary search (-1 when absent; the AppGroup controller keeps the
    list sorted, and an unsorted list is searched the same way as upstream does)."""
    low, high = 0, len(order) - 1
    while low <= high:
        mid = (low + high) // 2
        found = order[mid].workload.selector
        if found == selector:
            return order[mid].index
        if found < selector:
            low = mid + 1
        else:
            high = mid - 1
    return -1


class TopologicalSort:
    """Orders an AppGroup's pods by its topology order, the rest by priority."""

    name = NAME
    sdk_version = "1.5"
    Args = TopologicalSortArgs
    reads = (APP_GROUP_KIND,)

    def __init__(self, args: TopologicalSortArgs | None, handle: Any) -> None:
        args = args or TopologicalSortArgs()
        self.namespaces = list(args.namespaces)
        self.handle = handle

    @hookimpl
    def less(self, pod_info1: QueuedPodInfo, pod_info2: QueuedPodInfo) -> bool:
        pod1, pod2 = pod_info1.pod_info.pod, pod_info2.pod_info.pod
        group = pod_app_group(pod1)
        app_group = None
        if group and group == pod_app_group(pod2):
            lister = getattr(self.handle, "lister", None)
            app_group = find_app_group(lister, self.namespaces, group)
        if app_group is None:
            # Different (or no) AppGroups, or an AppGroup not found (upstream would
            # dereference nil): PrioritySort's order.
            p1, p2 = pod_info1.pod_info.priority, pod_info2.pod_info.priority
            return p1 > p2 or (p1 == p2 and pod_info1.timestamp < pod_info2.timestamp)
        order = app_group.status.topology_order
        # "<=" as upstream: two pods of one workload compare as less both ways.
        return find_pod_order(order, pod_workload_selector(pod1)) <= find_pod_order(
            order, pod_workload_selector(pod2)
        )
