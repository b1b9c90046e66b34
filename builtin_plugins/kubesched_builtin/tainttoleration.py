"""TaintToleration: nodes' taints repel pods that do not tolerate them (Filter, Score)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    NodeBatch,
    NodeInfo,
    NodeScores,
    NodeTable,
    PodInfo,
    QueueingHint,
    StateKey,
    Status,
    default_normalize_score,
    hookimpl,
)
from kubesched.api import Node, Pod, Taint, Toleration, find_untolerated_taint
from kubesched.api import tolerations_tolerate_taint as _tolerates
from kubesched_builtin import signers
from kubesched_builtin.names import TAINT_TOLERATION

NAME = TAINT_TOLERATION

COMPARISON_GATE = "TaintTolerationComparisonOperators"
"""The gate (alpha, off by default in v1.36) under which ``Gt``/``Lt`` tolerations compare
integer taint values; with it off such a toleration tolerates nothing."""

ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
"""Filter reason. Since kubernetes#134740 (v1.35, cherry-picked to v1.34) upstream no
longer names the taint ("node(s) had untolerated taint {key: value}" before), because
taint keys and values may be sensitive; the taint goes to the debug log instead."""
ERR_REASON_NOT_MATCH = "node(s) had taints that the pod didn't tolerate"
"""Upstream's exported ``ErrReasonNotMatch`` (kept for other components, unused here)."""

DO_NOT_SCHEDULE_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
"""The effects Filter enforces (upstream ``helper.DoNotScheduleTaintsFilterFunc``)."""
PREFER_NO_SCHEDULE = "PreferNoSchedule"

PRE_SCORE_KEY: StateKey[tuple[Toleration, ...]] = StateKey("PreScore" + NAME)
"""The pod's tolerations that can tolerate a PreferNoSchedule taint."""

_SETS_KEY = (NAME, "taint-sets")


def _taints(node_info: NodeInfo) -> Sequence[Taint]:
    node = node_info.node
    return node.spec.taints if node is not None else ()


def _taint_signature(node_info: NodeInfo) -> tuple[tuple[str, str, str], ...]:
    return tuple((t.key, t.value or "", t.effect) for t in _taints(node_info))


def _taint_sets(table: NodeTable) -> tuple[np.ndarray, list[Sequence[Taint]]]:
    """Group the nodes by their list of taints: ``(set id per row, taints of each set)``.

    Most clusters have a handful of distinct taint lists, so a pod's tolerations are
    evaluated once per list instead of once per node.
    """
    ids, firsts = table.grouped(_SETS_KEY, _taint_signature)
    return ids, [_taints(ni) for ni in firsts]


def prefer_no_schedule_tolerations(tolerations: Sequence[Toleration]) -> tuple[Toleration, ...]:
    """The tolerations with effect PreferNoSchedule or none (an empty effect matches all)."""
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


def count_intolerable_prefer_no_schedule(
    taints: Sequence[Taint],
    tolerations: Sequence[Toleration],
    *,
    comparison_operators: bool = False,
) -> int:
    """How many PreferNoSchedule taints none of ``tolerations`` tolerates
    (``comparison_operators``: honour ``Gt``/``Lt``, the gate's effect)."""
    return sum(
        1
        for t in taints
        if t.effect == PREFER_NO_SCHEDULE
        and not _tolerates(tolerations, t, comparison_operators=comparison_operators)
    )


def _untolerated(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], compare: bool = False
) -> bool:
    found = find_untolerated_taint(
        taints, tolerations, DO_NOT_SCHEDULE_EFFECTS, comparison_operators=compare
    )
    return found is not None


def _same_pod(a: Pod, b: Pod) -> bool:
    ma, mb = a.metadata, b.metadata
    if ma.uid or mb.uid:
        return ma.uid == mb.uid
    return (ma.namespace, ma.name) == (mb.namespace, mb.name)


def is_schedulable_after_node_change(
    pod: Pod, old_obj: Node | None, new_obj: Node, *, comparison_operators: bool = False
) -> QueueingHint:
    """Queue when the node went from having an untolerated taint (or not existing) to not."""
    tolerations, compare = pod.spec.tolerations, comparison_operators
    was_untolerated = old_obj is None or _untolerated(old_obj.spec.taints, tolerations, compare)
    if was_untolerated and not _untolerated(new_obj.spec.taints, tolerations, compare):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_pod_toleration_change(
    pod: Pod, old_obj: Pod | None, new_obj: Pod
) -> QueueingHint:
    """Queue when the rejected pod itself got a new toleration."""
    return QueueingHint.QUEUE if _same_pod(pod, new_obj) else QueueingHint.SKIP


class TaintToleration:
    """Filter: rejects a node with a NoSchedule/NoExecute taint the pod does not tolerate
    (UnschedulableAndUnresolvable). Score: the number of PreferNoSchedule taints the
    pod does not tolerate, normalised in reverse (fewer is better)."""

    name = NAME
    filter_depends_only_on_node = True
    """Filter reads the Node and the pod, never the pods on the node (preemption skips it)."""

    def __init__(self, args: Any, handle: Any) -> None:
        self._handle = handle
        self._compare = handle.feature_enabled(COMPARISON_GATE)

    # -- Filter ------------------------------------------------------------------------

    @hookimpl
    def sign_pod(self, pod: Pod, pod_info: PodInfo) -> list[tuple[str, Any]]:
        """Feasibility and score follow the pod's tolerations."""
        return [signers.tolerations(pod)]

    @hookimpl
    def filter(self, pod_info: PodInfo, node_info: NodeInfo) -> Status | None:
        if not _untolerated(_taints(node_info), pod_info.tolerations, self._compare):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNTOLERATED)

    @hookimpl
    def filter_nodes(self, pod_info: PodInfo, nodes: NodeBatch) -> Sequence[Status | None] | None:
        ids, sets = _taint_sets(nodes.table)
        tolerations = pod_info.tolerations
        verdicts = np.fromiter(
            (_untolerated(taints, tolerations, self._compare) for taints in sets),
            dtype=bool,
            count=len(sets),
        )
        if not verdicts.any():
            return None  # no taint set rejects the pod
        rejected = verdicts[ids[nodes.rows]]
        if not rejected.any():
            return None
        out = np.full(len(nodes), None, dtype=object)
        out[rejected] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNTOLERATED)
        return out

    # -- Score -------------------------------------------------------------------------
    @hookimpl
    def pre_score(self, state: CycleState, pod_info: PodInfo) -> Status | None:
        state.write(PRE_SCORE_KEY, prefer_no_schedule_tolerations(pod_info.tolerations))
        return None

    @hookimpl
    def score(self, state: CycleState, node_info: NodeInfo) -> int:
        tolerations = state.read(PRE_SCORE_KEY)
        return count_intolerable_prefer_no_schedule(
            _taints(node_info), tolerations, comparison_operators=self._compare
        )

    @hookimpl
    def score_nodes(self, state: CycleState, nodes: NodeBatch) -> np.ndarray:
        tolerations = state.read(PRE_SCORE_KEY)
        ids, sets = _taint_sets(nodes.table)
        counts = np.fromiter(
            (
                count_intolerable_prefer_no_schedule(
                    taints, tolerations, comparison_operators=self._compare
                )
                for taints in sets
            ),
            dtype=np.int64,
            count=len(sets),
        )
        return counts[ids[nodes.rows]]

    def _is_schedulable_after_node_change(
        self, pod: Pod, old_obj: Node | None, new_obj: Node
    ) -> QueueingHint:
        return is_schedulable_after_node_change(
            pod, old_obj, new_obj, comparison_operators=self._compare
        )

    @hookimpl
    def normalize_score(self, scores: NodeScores) -> None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self._is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATIONS),
                is_schedulable_after_pod_toleration_change,
            ),
        ]
