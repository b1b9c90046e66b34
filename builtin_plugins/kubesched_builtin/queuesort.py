"""PrioritySort: order the active queue by pod priority, then by time of enqueue (QueueSort)."""

from __future__ import annotations

from typing import Any

from kubesched import QueuedPodInfo, hookimpl
from kubesched_builtin.names import PRIORITY_SORT

NAME = PRIORITY_SORT


class PrioritySort:
    """Pops higher-priority pods first (``spec.priority``, 0 when unset); among equal
    priorities, the pod queued earlier (``timestamp``) first."""

    name = NAME

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    @hookimpl
    def less(self, pod_info1: QueuedPodInfo, pod_info2: QueuedPodInfo) -> bool:
        p1 = pod_info1.pod_info.priority
        p2 = pod_info2.pod_info.priority
        return p1 > p2 or (p1 == p2 and pod_info1.timestamp < pod_info2.timestamp)

    @staticmethod
    def sort_key(pod_info: QueuedPodInfo) -> tuple[int, float]:
        """``less`` as a key (``less(a, b)`` exactly when ``sort_key(a) < sort_key(b)``):
        the activeQ then sorts in C."""
        return (-pod_info.pod_info.priority, pod_info.timestamp)
