"""PodGroupPodsCount: prefers the placement that takes the most pods of a PodGroup
(PlacementScore), behind the TopologyAwareWorkloadScheduling gate."""

from __future__ import annotations

from typing import Any

from kubesched import MAX_NODE_SCORE, MIN_NODE_SCORE, Code, PodGroupAssignments, Status, hookimpl
from kubesched.api import WorkloadPodGroup
from kubesched_builtin.names import POD_GROUP_PODS_COUNT

NAME = POD_GROUP_PODS_COUNT

GATE = "TopologyAwareWorkloadScheduling"
"""The feature gate that puts the plugin in the default profile (alpha, off by default)."""

ERR_NO_PODS = "no pods from pod group are assigned to any of the candidate placements"
"""NormalizePlacementScore's error when no candidate placement holds a pod of the group."""


class PodGroupPodsCount:
    """Scores a placement by the group's pods it would hold: those already with a node
    (bound or assumed) plus those the trial placed there, scaled so that the best
    candidate gets 100 (``minCount`` plays no part, so close counts score close)."""

    name = NAME

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    @hookimpl
    def score_placement(
        self, pod_group: WorkloadPodGroup | None, assignments: PodGroupAssignments
    ) -> int:
        return self._scheduled(pod_group) + len(assignments.assignments)

    @hookimpl
    def normalize_placement_score(self, scores: list[int]) -> Status | None:
        most = max(scores, default=0)
        if most == 0:
            return Status(Code.ERROR, ERR_NO_PODS)
        for i, score in enumerate(scores):
            scores[i] = MIN_NODE_SCORE + score * (MAX_NODE_SCORE - MIN_NODE_SCORE) // most
        return None

    def _scheduled(self, pod_group: WorkloadPodGroup | None) -> int:
        """The group's pods with a node in the cycle's snapshot."""
        if pod_group is None:
            return 0
        namespace = pod_group.metadata.namespace or "default"
        return sum(
            1
            for node_info in self.handle.snapshot.list()
            for pod_info in node_info.pods
            if (group := pod_info.pod.spec.scheduling_group) is not None
            and group.pod_group_name == pod_group.name
            and pod_info.namespace == namespace
        )
