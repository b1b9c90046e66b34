"""The InterPodAffinity plugin: required pod (anti-)affinity as a filter, preferred as a score."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from pydantic import Field, ValidationError, ValidatorFunctionWrapHandler, field_validator

from kubesched import (
    ActionType,
    AffinityTerm,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    NodeBatch,
    NodeInfo,
    NodeScores,
    PluginArgs,
    PodInfo,
    QueueingHint,
    Status,
    hookimpl,
)
from kubesched.api import Pod
from kubesched_builtin import signers
from kubesched_builtin.names import INTER_POD_AFFINITY

from . import filtering, scoring
from .filtering import PRE_FILTER_KEY, PreFilterState
from .scoring import PRE_SCORE_KEY, PreScoreState
from .terms import EMPTY_LABELS, node_labels

NAME = INTER_POD_AFFINITY

MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100
DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
"""upstream ``v1.SetDefaults_InterPodAffinityArgs``."""


class InterPodAffinityArgs(PluginArgs):
    """``InterPodAffinityArgs``: the args of the InterPodAffinity plugin."""

    hard_pod_affinity_weight: int = Field(
        default=DEFAULT_HARD_POD_AFFINITY_WEIGHT,
        ge=MIN_HARD_POD_AFFINITY_WEIGHT,
        le=MAX_HARD_POD_AFFINITY_WEIGHT,
        description="The scoring weight for existing pods with a matching hard (required) "
        "affinity to the incoming pod; 0 disables that part of the score. Range 0..100.",
    )
    ignore_preferred_terms_of_existing_pods: bool = Field(
        default=False,
        description="Ignore existing pods' preferred affinity rules when scoring, unless "
        "the incoming pod has preferred inter-pod affinities (then Score is skipped for "
        "pods without them).",
    )

    @field_validator("hard_pod_affinity_weight", mode="wrap")
    @classmethod
    def _kubernetes_range_message(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> int:
        try:
            return handler(value)
        except ValidationError as err:
            if any(e["type"] in ("greater_than_equal", "less_than_equal") for e in err.errors()):
                raise ValueError(
                    f"Invalid value: {value}: not in valid range "
                    f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]"
                ) from None
            raise


class _PodView(NamedTuple):
    """What ``AffinityTerm.matches`` reads of a pod, without building a full PodInfo."""

    namespace: str
    labels: Mapping[str, str]


def _view(pod: Any) -> _PodView:
    if isinstance(pod, PodInfo):
        return _PodView(pod.namespace, pod.labels)
    return _PodView(pod.metadata.namespace or "default", pod.metadata.labels or EMPTY_LABELS)


def _matches_all(terms: Sequence[AffinityTerm], pod: _PodView) -> bool:
    # upstream podMatchesAllAffinityTerms with nil namespace labels: an empty label
    # set behaves as a nil one for every selector.
    if not terms:
        return False
    return all(t.matches(pod, EMPTY_LABELS) for t in terms)  # type: ignore[arg-type]


def _node_name(pod: Any) -> str:
    if isinstance(pod, PodInfo):
        return pod.node_name
    return pod.spec.node_name or ""


def _grouped(snapshot: Any, nodes: Sequence[NodeInfo]) -> Any:
    """``snapshot`` when its pod group indexes count exactly ``nodes``, else ``None``."""
    if hasattr(snapshot, "pods_by_labels") and nodes is snapshot.list():
        return snapshot
    return None


ERR_NOT_SIGNABLE = "pods with InterPodAffinity are not signable"
"""Why a pod with affinity terms cannot be signed (opportunistic batching), in upstream's
words."""


class InterPodAffinity:
    """Places pods relative to other pods: ``podAffinity`` / ``podAntiAffinity``.

    Filter enforces required terms (the pod's affinity and anti-affinity, and existing
    pods' required anti-affinity against it); Score prefers topology domains by the
    preferred terms of both sides and existing pods' required affinity.
    """

    name = NAME
    Args = InterPodAffinityArgs

    def __init__(self, args: InterPodAffinityArgs | None, handle: Any) -> None:
        self.args = args if args is not None else InterPodAffinityArgs()
        self.handle = handle

    # -- events ------------------------------------------------------------------------

    @hookimpl
    def sign_pod(self, pod: Pod, pod_info: PodInfo) -> list[tuple[str, Any]] | Status:
        """A pod with pod affinity or anti-affinity (even an empty one) depends on other
        pods' placement and cannot be signed. Otherwise its labels decide how the running
        pods' preferred terms score it; with ``ignorePreferredTermsOfExistingPods`` they
        are left out of the signature, as upstream does, so that pods differing only in
        labels share a batch."""
        affinity = pod.spec.affinity
        if affinity is not None and (
            affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
        ):
            return Status(Code.UNSCHEDULABLE, ERR_NOT_SIGNABLE)
        if self.args.ignore_preferred_terms_of_existing_pods:
            return []
        return [(signers.LABELS, dict(sorted(pod_info.labels.items())))]

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Assigned pods added, relabelled or deleted; nodes added or relabelled (and
        taint updates, which upstream registers so a node added while not ready is
        not missed)."""
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.POD,
                    ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            # Upstream registers UpdateNodeTaint only without queueing hints (to make up
            # for Node/Add events its preCheck drops); kubesched always uses hints.
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            ),
        ]

    @staticmethod
    def is_schedulable_after_pod_change(pod: Any, old_obj: Any, new_obj: Any) -> QueueingHint:
        """Queue when an assigned pod now matches the pod's affinity (added, or relabelled
        into it) or no longer matches its anti-affinity (deleted, or relabelled out)."""
        if (new_obj is not None and not _node_name(new_obj)) or (
            old_obj is not None and not _node_name(old_obj)
        ):
            return QueueingHint.SKIP
        info = pod if isinstance(pod, PodInfo) else PodInfo(pod)
        terms = info.required_affinity_terms
        anti_terms = info.required_anti_affinity_terms
        if new_obj is not None and old_obj is not None:
            old, new = _view(old_obj), _view(new_obj)
            if not _matches_all(terms, old) and _matches_all(terms, new):
                return QueueingHint.QUEUE
            if _matches_all(anti_terms, old) and not _matches_all(anti_terms, new):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if new_obj is not None:
            return QueueingHint.QUEUE if _matches_all(terms, _view(new_obj)) else QueueingHint.SKIP
        if old_obj is None or not _matches_all(anti_terms, _view(old_obj)):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    @staticmethod
    def is_schedulable_after_node_change(pod: Any, old_obj: Any, new_obj: Any) -> QueueingHint:
        """Queue when the added/updated node has a topology key of the pod's required terms."""
        labels = (new_obj.metadata.labels or EMPTY_LABELS) if new_obj is not None else EMPTY_LABELS
        info = pod if isinstance(pod, PodInfo) else PodInfo(pod)
        for t in (*info.required_affinity_terms, *info.required_anti_affinity_terms):
            if t.topology_key in labels:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP

    # -- PreFilter / Filter ------------------------------------------------------------
    @hookimpl
    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        """Count the topology pairs Filter needs; Skip when no term can apply."""
        if pod_info.parse_error:
            # Upstream's NewPodInfo failed: no node can satisfy terms it cannot read.
            return Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"parsing pod: {pod_info.parse_error}"
            )
        snapshot = self.handle.snapshot
        s = filtering.compute_pre_filter_state(
            pod_info,
            nodes,
            snapshot.have_pods_with_required_anti_affinity_list(),
            self.handle.lister,
            _grouped(snapshot, nodes),
        )
        if filtering.is_skippable(s):
            return Status.skip()
        state.write(PRE_FILTER_KEY, s)
        return None

    @hookimpl
    def pre_filter_add_pod(
        self, state: CycleState, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Count ``pod_info_to_add`` as if it ran on ``node_info``."""
        state.read(PRE_FILTER_KEY).update_with_pod(pod_info_to_add, node_info, 1)
        return None

    @hookimpl
    def pre_filter_remove_pod(
        self, state: CycleState, pod_info_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Stop counting ``pod_info_to_remove`` on ``node_info``."""
        state.read(PRE_FILTER_KEY).update_with_pod(pod_info_to_remove, node_info, -1)
        return None

    @hookimpl
    def filter(self, state: CycleState, node_info: NodeInfo) -> Status | None:
        """Reject the node if a required (anti-)affinity rule of either side fails there."""
        s: PreFilterState = state.read(PRE_FILTER_KEY)
        return filtering.filter_node(s, node_labels(node_info))

    @hookimpl
    def filter_nodes(self, state: CycleState, nodes: NodeBatch) -> np.ndarray:
        """``filter`` for a batch, with lookups over each topology key's distinct values;
        on a what-if batch of node copies, with each copy's own counts."""
        view = nodes.copies.get(NAME) if nodes.copies else None
        return filtering.filter_batch(state.read(PRE_FILTER_KEY), nodes, view)

    def pre_filter_copies(
        self,
        state: CycleState,
        pod_info: PodInfo,
        table: Any,
        rows: Sequence[int],
        pods: Sequence[Sequence[PodInfo]],
    ) -> filtering.CopyCounts:
        """The PreFilter counts of copies of the nodes at ``rows`` as numpy columns, for
        ``pods[j]`` added to or removed from the copy of ``rows[j]`` (see
        :class:`~kubesched.framework.preemption_batch.NodeCopies`)."""
        return filtering.CopyCounts(state.read(PRE_FILTER_KEY), table, rows, pods)

    # -- PreScore / Score ----------------------------------------------------------------
    @hookimpl
    def pre_score(self, state: CycleState, pod_info: PodInfo) -> Status | None:
        """Sum the weights per topology pair; Skip when no pair got any."""
        has_constraints = scoring.has_preferred_terms(pod_info)
        # Optionally ignore existing pods' preferences if the pod has none of its own.
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip()
        if pod_info.parse_error:
            # Upstream: "Ideally we never reach here, because errors will be caught by
            # PreFilter".
            return Status(Code.ERROR, f"failed to parse pod: {pod_info.parse_error}")
        snapshot = self.handle.snapshot
        if hasattr(snapshot, "pods_by_labels"):
            topology_score = scoring.grouped_topology_score(
                pod_info,
                snapshot,
                has_constraints,
                self.args.hard_pod_affinity_weight,
                self.handle.lister,
            )
        else:
            # Unless the pod has preferred terms, only nodes with pods with affinity matter.
            nodes = snapshot.list() if has_constraints else snapshot.have_pods_with_affinity_list()
            topology_score = scoring.compute_topology_score(
                pod_info,
                nodes,
                has_constraints,
                self.args.hard_pod_affinity_weight,
                self.handle.lister,
            )
        if not topology_score:
            return Status.skip()
        state.write(PRE_SCORE_KEY, PreScoreState(topology_score))
        return None

    @hookimpl
    def score(self, state: CycleState, node_info: NodeInfo) -> int:
        """The node's raw score: positive for affinity, negative for anti-affinity."""
        s: PreScoreState = state.read(PRE_SCORE_KEY)
        return scoring.score_node(s, node_labels(node_info))

    @hookimpl
    def score_nodes(self, state: CycleState, nodes: NodeBatch) -> np.ndarray:
        """``score`` for a batch, with lookups over each topology key's distinct values."""
        return scoring.score_batch(state.read(PRE_SCORE_KEY), nodes)

    @hookimpl
    def normalize_score(self, state: CycleState, scores: NodeScores) -> Status | None:
        """Map the lowest raw score to 0 and the highest to 100 (all 0 when equal)."""
        scoring.normalize(state.read(PRE_SCORE_KEY), scores)
        return None
