"""PodState: prefer nodes with terminating pods, avoid nodes with pods nominated to them (Score).

Follows kubernetes-sigs/scheduler-plugins ``pkg/podstate``: a node's raw score is the
number of its pods being deleted (``metadata.deletionTimestamp`` set: their resources
come free soon) minus the number of pods nominated to it by preemption (they will claim
its resources); NormalizeScore maps the lowest raw score to 0 and the highest to 100,
linearly (all equal: 0).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched import MAX_NODE_SCORE, MIN_NODE_SCORE, NodeInfo, NodeScores, hookimpl

__all__ = ["NAME", "PodState", "terminating_pods"]

NAME = "PodState"


def terminating_pods(node_info: NodeInfo) -> int:
    """How many of the node's pods have a deletion timestamp."""
    return sum(1 for pi in node_info.pods if pi.pod.metadata.deletion_timestamp is not None)


class PodState:
    """Scores nodes by terminating minus nominated pods (Score, NormalizeScore)."""

    name = NAME
    sdk_version = "1.0"

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle
        # Terminating pods per node, with the NodeInfo generation they were counted at.
        self._terminating: dict[str, tuple[int, int]] = {}

    def _terminating_count(self, node_info: NodeInfo) -> int:
        cached = self._terminating.get(node_info.name)
        if cached is not None and cached[0] == node_info.generation:
            return cached[1]
        count = terminating_pods(node_info)
        self._terminating[node_info.name] = (node_info.generation, count)
        return count

    @hookimpl
    def score(self, node_info: NodeInfo) -> int:
        nominator = self.handle.nominator
        nominated = len(nominator.nominated_pods_for_node(node_info.name)) if nominator else 0
        return self._terminating_count(node_info) - nominated

    @hookimpl
    def normalize_score(self, scores: NodeScores) -> None:
        values = scores.values
        if len(values) == 0:
            return
        lowest, highest = int(values.min()), int(values.max())
        if highest == lowest:
            values[:] = MIN_NODE_SCORE
            return
        span = MAX_NODE_SCORE - MIN_NODE_SCORE
        # Go's integer division: the shifted scores are not negative, so floor is the same.
        np.floor_divide((values - lowest) * span, highest - lowest, out=values)
        values += MIN_NODE_SCORE
